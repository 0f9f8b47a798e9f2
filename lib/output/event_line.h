// The standard event line (SPEC §3.9), prefixed with WALL(ev):
//   {WALL} {comm:>16} {pid:>6} {LAT} [{cpu:03}] {EVTS}: {sys}:{name}: {INFO}
#pragma once

#include <string>

#include "perf-prof/profiler.h"

namespace perfprof::output {

// Appends the line (with a trailing newline) for a tracepoint or probe sample to `line`.
// A non-zero `marker` is printed after WALL as its own column (trace's host/guest mark).
void format_event_line(Context& ctx, const Sample& s, std::string& line, char marker = 0);

}  // namespace perfprof::output
