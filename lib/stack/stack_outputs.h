// The stack outputs of profile, trace and task-state (--flame-graph, --pprof), fed alike.
#pragma once

#include <string_view>

#include "perf-prof/sample.h"

namespace perfprof::stack {

class FlameGraph;
class PprofStacks;
class Printer;

// Counts the sample's call chain into every output given (either may be null), under its
// process's name `comm`: the folded root frame and pprof's comm label, left out when the name
// is unknown ("<...>"). False when there is no output to count it in: the caller prints it.
bool count_stack(FlameGraph* flame, PprofStacks* pprof, Printer& printer, const Sample& s,
                 std::string_view comm);

}  // namespace perfprof::stack
