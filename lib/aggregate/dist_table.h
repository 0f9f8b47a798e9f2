// Distribution statistics per node (SPEC-PROFILERS §P11 num-dist): for each (instance, event)
// node the count, sum, min, max, values above a threshold and a quantile sketch
// (output::LatencyDist, the statistics task-state and multi-trace print), and the table:
//
//   {WALL(now)}
//   [[CPU] |[THREAD] ]{"event":<W} {"calls":>8} {"total":>16} {"min":>12} {"avg":>12} {"p99":>12} {"max":>12}
//   [----- |-------- ]{'-'×W} -------- ---------------- ------------ ------------ ------------ ------------
//   [[{cpu:03}] |{tid:<8} ]{name:>W} {n:>8} {sum:>16} {min:>12} {avg:>12} {p99:>12} {max:>12}
//
// W = the longest event name, at least 5 (§P11's Recommendation); avg = sum / n and p99 are
// truncated to integers; nodes in instance order, then event order; printed nodes are removed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "output/latency.h"

namespace perfprof::aggregate {

class DistTable {
public:
    // How rows are split and labelled: one node per event, or per (instance, event) with the
    // instance shown as its CPU or its thread.
    enum class PerInstance { No, Cpu, Thread };

    DistTable(std::vector<std::string> event_names, PerInstance per);

    // Adds `v` to the node of (instance, event). `label` is what the instance column shows (its
    // CPU or tid), taken from the first value of that instance; `than` counts values above it
    // (0 = none). Allocates only for an instance not seen before and in the sketch's growth.
    void add(int instance, uint32_t label, int event, uint64_t v, uint64_t than = 0);

    bool empty() const { return !any_; }
    // The node, or null when it holds nothing (tests).
    const output::LatencyDist* node(int instance, int event) const;

    // The table after `wall` (WALL(now), printed with its trailing space); nothing when empty.
    // Every node is cleared.
    void print(FILE* out, std::string_view wall);

private:
    struct Instance {
        int index = -1;  // -1: slot unused
        uint32_t label = 0;
    };
    size_t slot(int instance);

    std::vector<std::string> names_;
    PerInstance per_;
    int width_;
    bool any_ = false;
    std::vector<Instance> instances_;         // by instance index (0 for PerInstance::No)
    std::vector<output::LatencyDist> nodes_;  // instances_.size() × names_.size()
};

}  // namespace perfprof::aggregate
