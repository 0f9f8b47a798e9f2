// Folded flame-graph output (SPEC §5.6): stacks counted by their folded text, written at exit
// or at every -i tick (with the interval's date and time as the first two frames). Beside a
// NAME.folded file goes the picture: NAME.svg at exit, or with -i one NAME-YYYYMMDD-HHMMSS.svg
// per interval (flamegraph/flame_svg.h), its frames coloured by what the symbolizer knew.
//
// Sampled call chains are counted as they come, by their raw addresses: each distinct chain is
// symbolized once, when the graph is written (or when its process's symbols are about to be
// dropped: the graph is a sym::ProcessObserver of its printer's Symbolizer), not once per sample.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/fd.h"
#include "flamegraph/folded.h"
#include "stack/chain_counts.h"
#include "sym/symbolizer.h"

namespace perfprof::stack {

class Printer;

class FlameGraph final : public sym::ProcessObserver {
public:
    // NAME "" → stdout; an existing character/block device, FIFO or socket → written as is;
    // otherwise NAME.folded is created (an existing one is renamed NAME.folded.old). Throws
    // Error when the file cannot be created (SPEC §10 #9: never silently disabled).
    // `count_name` says what a count is in the picture: samples, events, ... Call chains are
    // symbolized through `printer` (null: stacks come by add() only), which must outlive it.
    FlameGraph(Printer* printer, const std::string& name, std::string count_name = "samples");
    ~FlameGraph();
    FlameGraph(const FlameGraph&) = delete;
    FlameGraph& operator=(const FlameGraph&) = delete;

    // Devices, FIFOs and sockets get the line-per-frame form: stacks are added as
    // "inner\n...\nouter\nroot\n" (Printer::frame_lines plus the root line).
    bool line_per_frame() const { return !regular_ && own_; }
    // Counts one stack `n` times: folded "root;outer;...;inner;" (a trailing ';' is dropped),
    // or the line-per-frame text.
    void add(const std::string& stack, uint64_t n = 1);
    // Counts a sampled call chain `n` times under `root` (the process name; empty: no root frame), in
    // the form this output takes, symbolized through the printer later.
    void add_callchain(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root, uint64_t n = 1);
    // Symbolizes every pending chain into its folded stack.
    void fold_pending();
    bool pending(uint32_t pid) const { return pending_.holds(pid); }
    // Writes every stack, prefixed with `prefix` ("YYYY-MM-DD;HH:MM:SS;" or ""), and its
    // picture (the interval's, when there is a prefix), then resets.
    void flush(const std::string& prefix = {});
    // Final flush; for a regular file, says on stdout where the picture is.
    void finish(const std::string& prefix = {});
    // The process's symbols are about to go: its pending chains are symbolized now.
    void before_forget(uint32_t tgid) override;

private:
    void write_svg(const std::string& prefix);
    void open_output(const std::string& name);

    std::string path_, base_;  // NAME.folded and NAME (regular files)
    std::string count_name_;
    std::string last_svg_, last_stamp_;  // the newest picture, its interval's YYYYMMDD-HHMMSS
    int svgs_ = 0, same_second_ = 0;
    int64_t since_ = 0;  // CLOCK_REALTIME start of the stacks held
    // Frames the symbolizer knew to be other than the program's own code, for the colours.
    std::unordered_map<std::string, flamegraph::FrameKind> kinds_;
    std::string frame_kinds_;  // fold_pending's buffer
    FILE* out_ = nullptr;
    bool own_ = false, regular_ = false, wrote_ = false;
    std::unordered_map<std::string, uint64_t> counts_;
    ChainCounts pending_;  // chains not yet symbolized
    Printer* printer_ = nullptr;
    sym::Symbolizer* symbols_ = nullptr;  // the printer's, which told us of exits
    std::string text_;                    // fold_pending's buffer
};

// "YYYY-MM-DD;HH:MM:SS;" of a CLOCK_REALTIME time, local zone.
std::string interval_prefix(int64_t realtime_ns);

}  // namespace perfprof::stack
