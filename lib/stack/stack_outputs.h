// The stack outputs of a profiler (-g's stack lines, --flame-graph, --pprof), built alike from
// Options, and fed alike.
#pragma once

#include <memory>
#include <string_view>

#include "perf-prof/options.h"
#include "perf-prof/sample.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::stack {

// What a profiler records and how its outputs count.
struct StackRequest {
    const char* profiler;             // for --pprof's usage error ("profile", ...)
    bool stacks = false;              // samples carry call chains (-g): else no printer and no flame graph
    bool kernel = true, user = true;  // the halves recorded
    // --flame-graph: what a count is ("samples", "events", ...); flame = false: none even
    // when asked for (the profiler refuses or ignores it in this mode).
    const char* flame_count = "samples";
    bool flame = true;
    PprofStacks::Kind pprof_kind = {};
    int max_stack = kMaxStack;  // the events' sample_max_stack, if set
};

struct StackOutputs {
    std::unique_ptr<Printer> printer;    // when r.stacks
    std::unique_ptr<FlameGraph> flame;   // when r.stacks, r.flame and --flame-graph
    std::unique_ptr<PprofStacks> pprof;  // when --pprof (a usage error without -g)

    // Hands the three to a profiler's members.
    void move_to(std::unique_ptr<Printer>& p, std::unique_ptr<FlameGraph>& f,
                 std::unique_ptr<PprofStacks>& pp) {
        p = std::move(printer);
        f = std::move(flame);
        pp = std::move(pprof);
    }
};

// The outputs `opt` asks for, symbolized through `symbols`. Throws Error (a file that cannot be
// created, --pprof without -g).
StackOutputs stack_outputs(const Options& opt, sym::Symbolizer& symbols, const StackRequest& r);

// Counts the sample's call chain into every output given (either may be null), under its
// process's name `comm`: the folded root frame and pprof's comm label, left out when the name
// is unknown ("<...>"), `n` times (a weight; 0 counts nothing). False when there is no output
// to count it in: the caller prints it.
bool count_stack(FlameGraph* flame, PprofStacks* pprof, const Sample& s, std::string_view comm,
                 uint64_t n = 1);

}  // namespace perfprof::stack
