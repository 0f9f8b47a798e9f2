// The standard event line (SPEC §3.9), prefixed with WALL(ev):
//   {WALL} {comm:>16} {pid:>6} {LAT} [{cpu:03}] {EVTS}: {sys}:{name}: {INFO}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "perf-prof/profiler.h"

namespace perfprof::output {

// Appends "{WALL} {comm:>16} {tid:>6} {lat} [{cpu:03}] {EVTS}: " to `line`: the head every
// sample line shares. An empty `lat` leaves out the LAT column (profile's lines); a non-zero
// `marker` is printed after WALL as its own column. A non-empty `title` (the sample's
// Sample::title) is printed padded to WALL's 26 columns instead of WALL(ev), and then the
// marker column always (' ' when the line has none): multi-trace --detail titles its context
// events so, those a nested profiler prints included (SPEC §4.6.7).
void append_line_head(Context& ctx, uint64_t time, uint32_t tid, uint32_t cpu, std::string_view lat,
                      char marker, std::string& line, std::string_view title = {});

// Appends the line (with a trailing newline) for a tracepoint or probe sample to `line`.
// A non-zero `marker` is printed after WALL as its own column (trace's host/guest mark);
// s.title, when set, replaces WALL (append_line_head).
void format_event_line(Context& ctx, const Sample& s, std::string& line, char marker = 0);

}  // namespace perfprof::output
