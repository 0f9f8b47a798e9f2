// Folded stacks (ANCHORS §7.1) as the flame-graph renderer reads them: one line per stack,
// frames from root to leaf joined by ';', a space, a count (an optional second count, the
// "after" of a differential pair, is the one drawn). Frames are interned; each name has a kind
// that picks its colour. A differential set also holds a "before" count per stack: the
// picture is drawn with the after counts, and a stack only in the before profile is kept with
// an after count of 0 (it adds to its ancestors' before counts and is drawn as gone).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace perfprof::flamegraph {

// What a frame is, for its colour. The values are the characters stack::Printer::fold writes.
enum class FrameKind : char {
    User = 'u',       // the program's own code
    Library = 'l',    // a shared object's code (libc.so.6, ld-linux, libfoo.so) ("_[l]")
    Kernel = 'k',     // kernel code (folded annotation "_[k]")
    Jit = 'j',        // JIT-compiled code ("_[j]")
    Inlined = 'i',    // an inlined function ("_[i]")
    Unknown = '?',    // no mapping, no symbol: "[unknown]", "Unknown"
    Fallback = 'f',   // perf-prof's "[dso+0x…]": mapped, but the file has no symbol there
    Separator = '-',  // "-" or "--": a kernel/user divider; also the interval date/time frames
    OffCpu = 'o',     // "[off-cpu: S]": the root of a stack a task left the CPU with (profile
                      // --off-cpu); the frames above it are drawn as off-CPU time too
};

class FoldedStacks {
public:
    // Adds one folded line's stack ("a;b;c", no count) `n` times. Frame annotations are taken off
    // the names and kept as kinds: "_[k]" kernel, "_[j]" JIT, "_[i]" inlined, "_[l]" library,
    // "_[w]" kernel (a waker stack). Empty frames (";;") are dropped; an empty stack is ignored.
    // `before` (non-zero) makes the set differential: the stack counted `before` times in the
    // profile compared with, kept even when `n` is 0.
    void add(std::string_view stack, uint64_t n, uint64_t before = 0);
    // The kind of a name that has no annotation of its own (from who made the stacks).
    void set_kind(std::string_view name, FrameKind kind);

    // Stack i: its name ids, root first, and its count. Stacks keep the order they were added in.
    size_t size() const { return stacks_.size(); }
    std::span<const uint32_t> frames(size_t i) const {
        return {frames_.data() + stacks_[i].first, stacks_[i].size};
    }
    uint64_t count(size_t i) const { return stacks_[i].count; }
    const std::string& name(uint32_t id) const { return names_[id]; }
    FrameKind kind(uint32_t id) const { return kinds_[id]; }
    size_t name_count() const { return names_.size(); }
    uint64_t total() const { return total_; }
    bool empty() const { return stacks_.empty(); }
    // A differential set: some stack has a before count.
    bool differential() const { return differential_; }
    uint64_t before(size_t i) const { return differential_ ? before_[i] : 0; }
    uint64_t before_total() const { return before_total_; }

private:
    uint32_t intern(std::string_view raw);

    std::deque<std::string> names_;  // display names (annotation taken off); stable addresses
    std::deque<std::string> raw_;    // the frames as written, the interning key
    std::vector<FrameKind> kinds_;
    std::unordered_map<std::string_view, uint32_t> ids_;  // views into raw_
    std::unordered_map<std::string, FrameKind> hints_;
    // Every stack's frames end to end in one array: a 300k-stack file holds millions of frames,
    // and a vector per stack would cost more in headers and allocations than in ids.
    struct Stack {
        size_t first;
        uint32_t size;
        uint64_t count;
    };
    std::vector<uint32_t> frames_;
    std::vector<Stack> stacks_;
    uint64_t total_ = 0;
    // Before counts, one per stack once the set is differential (a plain set pays nothing).
    std::vector<uint64_t> before_;
    uint64_t before_total_ = 0;
    bool differential_ = false;
};

// The annotation a folded frame of `kind` carries, as stackcollapse-perf.pl writes them and
// FoldedStacks::add reads them back: "_[k]", "_[j]", "_[i]" and "_[l]" (ours, a shared
// object's code); "" for user code and the kinds a name shows by itself ([unknown], ...).
std::string_view kind_annotation(FrameKind kind);

// The result of reading a folded file: what was drawn and what was not.
struct ParseReport {
    size_t lines = 0;      // stack lines read
    size_t bad = 0;        // lines that are not "STACK COUNT" (blank lines are not counted)
    size_t first_bad = 0;  // 1-based number of the first bad line
    std::string why;       // what is wrong with it
};

// Which count of a line goes where.
enum class Feed : uint8_t {
    Drawn,   // the count (of a pair, the second) is drawn
    Before,  // the count is the before count of a differential set
    Pairs,   // "STACK BEFORE AFTER": both counts of a differential set; one count is a bad line
};

// Reads folded text into `out` in pieces of any size, so that a file need not be whole in
// memory: each line is parsed once its newline (or finish()) comes. Never throws: a bad line is
// skipped and reported.
class FoldedReader {
public:
    explicit FoldedReader(FoldedStacks& out, Feed feed = Feed::Drawn) : out_(out), feed_(feed) {}
    void feed(std::string_view text);
    // Parses a last line without a newline; what the whole text held.
    ParseReport finish();

private:
    void line(std::string_view line);

    FoldedStacks& out_;
    Feed feed_;
    ParseReport report_;
    size_t line_no_ = 0;
    std::string partial_;  // a line whose newline has not come yet
};

// The same for a text that is whole.
ParseReport parse_folded(std::string_view text, FoldedStacks& out, Feed feed = Feed::Drawn);

}  // namespace perfprof::flamegraph
