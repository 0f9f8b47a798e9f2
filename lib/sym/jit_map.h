// JIT symbol maps (/tmp/perf-PID.map): the names a JIT compiler (Node and V8 with
// --perf-basic-prof, the JVM with perf-map-agent, .NET, LuaJIT, Python 3.12 -X perf, wasmtime)
// writes for code it generated in anonymous memory, one "START SIZE name" line per function.
// Perf's convention: START and SIZE in hex (0x optional), the name runs to the end of the line.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/fd.h"

namespace perfprof::sym {

struct JitMapLine {
    uint64_t start = 0, size = 0;
    std::string_view name;  // into the parsed line
};
// One line (without its '\n'; a trailing '\r' is dropped). False for anything else: fields
// that are not hex, a size of 0, a range past the end of the address space, no name.
bool parse_jit_map_line(std::string_view line, JitMapLine& out);

// The symbols of one map, in the order the file gave them: a later line wins over what it
// overlaps (a JIT moves and reuses code, and appends the new name). Memory is bounded: past
// kMaxPieces ranges or kMaxNameBytes of names, further lines are dropped (full()).
class JitSymbols {
public:
    static constexpr size_t kMaxPieces = 1u << 19;
    static constexpr size_t kMaxNameBytes = 64u << 20;

    void add(const JitMapLine& l);
    // Whole lines, '\n'-separated; bad lines are skipped. Returns the lines taken.
    size_t add_text(std::string_view text);
    // The name of the function holding addr (nullptr if none), its start and size.
    const std::string* find(uint64_t addr, uint64_t* start, uint64_t* size) const;
    size_t pieces() const { return pieces_.size(); }
    size_t functions() const { return names_.size(); }  // distinct names
    size_t name_bytes() const { return name_bytes_; }
    bool full() const { return full_; }
    void clear();

private:
    struct Piece {
        uint64_t end;
        uint64_t fn_start, fn_size;  // the line this piece is left of (offsets count from it)
        uint32_t name;
    };
    std::map<uint64_t, Piece> pieces_;  // by start; disjoint
    std::deque<std::string> names_;     // stable addresses for Frame::sym
    std::unordered_map<std::string_view, uint32_t> name_ids_;
    size_t name_bytes_ = 0;
    bool full_ = false;
};

// The map of one process, read while it lives and kept after it exits (its file stays in
// /tmp): through the process's own /tmp when it is in another mount namespace (a container),
// named by its pid there, else /tmp/perf-PID.map. Read again from where the last read ended
// when the file has grown. A file is taken only when it is a regular file (never a FIFO or a
// device: reads would block) owned by root, by perf-prof's user or by the process's user;
// a file planted in /tmp by someone else would put names of their choosing on the frames.
class JitMap {
public:
    explicit JitMap(int pid);
    JitMap(const JitMap&) = delete;
    JitMap& operator=(const JitMap&) = delete;

    // The function holding addr. On a miss, the file is read again if it changed (one stat).
    const std::string* find(uint64_t addr, uint64_t* start, uint64_t* size);
    // Reads what the file gained since the last read.
    void refresh();
    // The file as frames show it: "/tmp/perf-PID.map".
    const std::string& path() const { return display_; }
    const JitSymbols& symbols() const { return syms_; }

private:
    int open_file() const;

    int pid_;
    std::string display_, host_path_, ns_name_;
    core::Fd ns_tmp_;  // the process's /tmp when it has its own mount namespace
    std::vector<uid_t> uids_;
    JitSymbols syms_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    uint64_t read_ = 0;  // bytes of the file taken (up to the last whole line)
    std::string last_;   // the (up to 64) bytes before read_
    struct Seen {
        dev_t dev;
        ino_t ino;
        uint64_t size;
        int64_t ctime_s, ctime_ns;  // a chown changes it too
        bool operator==(const Seen&) const = default;
    };
    Seen seen_{};  // the file when find() last looked
};

}  // namespace perfprof::sym
