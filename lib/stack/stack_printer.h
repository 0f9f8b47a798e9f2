// Stack lines (SPEC §5.3, with the fallback labels) and folded frames (§5.6) from a
// sampled call chain: kernel frames through /proc/kallsyms, user frames through the session's
// sym::Symbolizer (syms_cache → syms → dso → object → sym).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flamegraph/folded.h"
#include "sym/kallsyms.h"
#include "sym/symbolizer.h"
#include "sym/syms.h"

namespace perfprof::stack {

// The kernel's default perf_event_max_stack: a chain of this many frames may have been cut.
constexpr int kMaxStack = 127;
// The frames a chain of an event with attr `a` holds at most.
inline int max_stack_of(const perf_event_attr& a) {
    return a.sample_max_stack ? int(a.sample_max_stack) : kMaxStack;
}

class Printer {
public:
    // Symbolizes through `symbols` (which must outlive the printer) the halves the profiler
    // records; chains of `max_stack` frames or more end in "[truncated]" (print()).
    Printer(sym::Symbolizer& symbols, bool kernel, bool user, int max_stack = kMaxStack);

    sym::Symbolizer& symbolizer() { return syms_; }
    int max_stack() const { return max_stack_; }

    // One line per frame, innermost first, 4-space indent:
    //   kernel:  {ip:016x} {sym}+{off:#x} ([kernel.kallsyms])
    //   user:    {ip:016x} {sym}+{off:#x} ({dso})  |  {ip:016x} [{dso}+{file offset:#x}]
    //            {ip:016x} [unknown] (not even the mapping is known)
    //   before any context marker: {ip:016x}
    // A chain of `max_stack` frames or more may have been cut by the kernel, and an unwound
    // one ends in kChainTruncated when its stack copy ran out: a last "    [truncated]" line
    // says so. A chain with no frame at all (context markers only, or empty) prints one
    // "    [no frame]" line, so that every printed event is followed by its stack.
    void print(const uint64_t* ips, uint64_t nr, uint32_t pid, int max_stack, std::string& out);
    // print() with the printer's max_stack().
    void print(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string& out) {
        print(ips, nr, pid, max_stack_, out);
    }

    // Folded frame names, outermost first (user part, then kernel part), each followed by ';';
    // a JIT frame's name ends in "_[j]" (flamegraph/folded.h's mark of its kind).
    // `kinds`, if given, gets one flamegraph::FrameKind character per frame (the picture's
    // colours). Returns false for a chain of context markers only.
    bool fold(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string& out, std::string* kinds = nullptr);
    // The line-per-frame form of a flame-graph stack (SPEC §5.6, for devices and pipes):
    // "{sym}+{off:#x}\n" per frame, innermost first, kernel part then user part.
    bool frame_lines(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string& out);

    // fold()'s frames one by one, for outputs that keep frames apart (pprof). leaf_first()
    // lists a chain's frames innermost first (fold() writes them in the reverse order): the
    // kernel part, then the rest, context markers left out.
    // The chain's context markers; Truncated: the kChainTruncated frame ("[truncated]").
    enum class Context : uint8_t { Kernel, User, Other, Truncated };
    struct ChainFrame {
        Context ctx;
        uint64_t ip;
    };
    static void leaf_first(const uint64_t* ips, uint64_t nr, std::vector<ChainFrame>& out);
    // A frame's name as fold() writes it (without the ';'), and what kind of code it is. For a
    // user frame, `resolved` receives what the symbols say about it (resolved->dso null: not
    // even the mapping is known).
    using FrameKind = flamegraph::FrameKind;
    FrameKind folded_name(const ChainFrame& f, uint32_t pid, std::string& out,
                          sym::Frame* resolved = nullptr);

    // Symbolization of `pid`'s chains comes later (flame graphs): its maps are read now, while
    // it lives, if user frames are printed at all.
    void prepare(uint32_t pid);

private:
    // Frame text: symbol (+offset and file unless `bare`), or the fallback labels; returns
    // what kind of frame it is.
    FrameKind user_frame(uint32_t pid, uint64_t ip, std::string& out, bool bare, bool offset = true,
                         sym::Frame* resolved = nullptr);
    FrameKind kernel_frame(uint64_t ip, std::string& out, bool bare, bool offset = true);

    sym::Symbolizer& syms_;
    std::shared_ptr<sym::Kallsyms> ksyms_;
    bool user_;
    int max_stack_;
};

}  // namespace perfprof::stack
