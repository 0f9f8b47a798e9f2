// The counting group of hrcount, stat and hrtimer (SPEC-PROFILERS §P9, §P10, §P15): a
// cpu-clock leader reading the whole group (read_format ID|GROUP) and every real event of
// -e as a counting member (sample_period 0, kernel filters only, cpus= kept).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf-prof/profiler.h"

namespace perfprof::counters {

struct CounterGroup {
    std::vector<std::string> names;      // alias or sys:name, per member
    std::vector<std::string> vars;       // alias or name (no sys:), per member: hrtimer's variables
    std::vector<std::vector<int>> cpus;  // cpus= per member (empty = all)
    uint64_t read_format = PERF_FORMAT_ID | PERF_FORMAT_GROUP;

    // The members opened on a CPU (-1: a thread, all of them), in group order.
    std::vector<int> present_on(int cpu) const;
};

// The leader: PERF_TYPE_SOFTWARE/CPU_CLOCK, disabled=0. `period_ns` 0 = a pure counter (stat),
// else sample_period = period_ns; `freq` > 0 = sample_freq instead. Sample type TID|TIME|CPU|READ.
EventSpec clock_leader(uint64_t period_ns, uint64_t freq);

// Appends the leader and the members of `events` (the -e list) to `plan`, fills `group`.
// Nested profilers are refused; an empty list throws "monitor({profiler}) init failed".
void plan_group(Context& ctx, const std::string& profiler, const std::string& events, EventSpec leader,
                EventPlan& plan, CounterGroup& group);

// "[000] " for a CPU, "[  1234] " for a thread.
std::string instance_label(Context& ctx, int instance);

}  // namespace perfprof::counters

namespace perfprof::counters {
// hrtimer's and irq-off's sample line:
// "{WALL(ev)}     pid {pid:>6} tid {tid:>6} [{cpu:03}] {EVTS-T}: {name}: cpu-clock {ns} ns\n".
// EVTS-T: the timestamp truncated to microseconds.
void append_evts_t(uint64_t t, std::string& out);
void append_timer_line(Context& ctx, const Sample& s, const char* name, uint64_t ns, std::string& out);
}  // namespace perfprof::counters

namespace perfprof::event {
struct Resolved;
}
namespace perfprof::counters {
// The `help` word's template (SPEC §1.10, §P0) of hrcount, stat and hrtimer: the events with
// their filters and the attributes these profilers read (cpus=, alias=), then `tail`
// (the profiler's own options: "[--period .] [--perins]", ...) and the -C/-i given or hinted.
std::string help_line(const char* profiler, const Options& opt, const std::vector<event::Resolved>& events,
                      const std::string& tail);
}  // namespace perfprof::counters
