// The run-time half of hrcount and stat: group reads (a leader sample's READ words or a
// read() of the leader) into per-member deltas, the Series they feed, the printing of
// complete rounds and the reset rule, on the Context's output.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "counters/group_plan.h"
#include "counters/series.h"
#include "perf-prof/profiler.h"

namespace perfprof::counters {

class SeriesRun {
public:
    SeriesRun(Context& ctx, const CounterGroup& group, std::string profiler, uint64_t slots, uint64_t period_ns,
              bool perins);

    // One group read of `instance`; returns the leader's (cpu-clock) delta, 0 on the first
    // read of an instance (its baseline). `late` says whether the timer was late.
    uint64_t on_read(int instance, const uint64_t* words, size_t n, bool& late);
    // Prints the complete rounds; with `check_reset`, when a round was printed (the moment the
    // slowest instance completed it), applies the reset rule. Not at the -i tick: a ring read
    // halfway through the batches of wakeup_events = H looks H samples behind.
    void flush(bool check_reset);

private:
    void start();

    Context& ctx_;
    const CounterGroup& group_;
    std::string profiler_;
    uint64_t slots_, period_;
    bool perins_;
    std::unique_ptr<Series> series_;
    std::vector<std::vector<int>> present_;
    std::vector<std::vector<uint64_t>> prev_;
    std::vector<bool> first_;
    std::vector<uint64_t> deltas_, values_;
    std::string out_;
};

}  // namespace perfprof::counters
