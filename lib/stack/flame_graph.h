// Folded flame-graph output (SPEC §5.6): stacks counted by their folded text, written at exit
// or at every -i tick (with the interval's date and time as the first two frames).
//
// Sampled call chains are counted as they come, by their raw addresses: each distinct chain is
// symbolized once, when the graph is written (or when its process's symbols are about to be
// dropped, see forget_process), not once per sample.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/fd.h"

namespace perfprof::stack {

class Printer;

class FlameGraph {
public:
    // NAME "" → stdout; an existing character/block device, FIFO or socket → written as is;
    // otherwise NAME.folded is created (an existing one is renamed NAME.folded.old). Throws
    // Error when the file cannot be created (SPEC §10 #9: never silently disabled).
    explicit FlameGraph(const std::string& name);
    ~FlameGraph();

    // Devices, FIFOs and sockets get the line-per-frame form: stacks are added as
    // "inner\n...\nouter\nroot\n" (Printer::frame_lines plus the root line).
    bool line_per_frame() const { return !regular_ && own_; }
    // Counts one stack `n` times: folded "root;outer;...;inner;" (a trailing ';' is dropped),
    // or the line-per-frame text.
    void add(const std::string& stack, uint64_t n = 1);
    // Counts a sampled call chain under `root` (the process name; empty: no root frame), in
    // the form this output takes, symbolized through `p` later: `p` must outlive the graph.
    // `scratch` is the caller's reusable buffer.
    void add_callchain(Printer& p, const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root,
                       std::string& scratch);
    // Symbolizes every pending chain into its folded stack.
    void fold_pending();
    bool pending(uint32_t pid) const { return raw_pids_.count(pid) != 0; }
    // Writes every stack, prefixed with `prefix` ("YYYY-MM-DD;HH:MM:SS;" or ""), and resets.
    void flush(const std::string& prefix = {});
    // Final flush; for a regular file, prints the flamegraph.pl hint on stdout.
    void finish(const std::string& prefix = {});

private:
    std::string path_;
    FILE* out_ = nullptr;
    bool own_ = false, regular_ = false, wrote_ = false;
    std::unordered_map<std::string, uint64_t> counts_;
    // Pending chains: pid, root length, root, addresses → count; and their processes.
    std::unordered_map<std::string, uint64_t> raw_;
    std::unordered_set<uint32_t> raw_pids_;
    Printer* printer_ = nullptr;
    std::string text_;  // fold_pending's buffer
};

// Before the symbols of process `tgid` are dropped (exit, exec): every flame graph symbolizes
// the chains it holds for it, then the process's symbols are forgotten.
void forget_process(uint32_t tgid);

// "YYYY-MM-DD;HH:MM:SS;" of a CLOCK_REALTIME time, local zone.
std::string interval_prefix(int64_t realtime_ns);

}  // namespace perfprof::stack
