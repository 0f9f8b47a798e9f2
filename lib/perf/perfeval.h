// Performance evaluation (SPEC §1.4 --perfeval-cpus / --perfeval-pids / --sampling-limit):
// a device's samples per second, and those of the listed CPUs or processes, printed at each
// -i tick; above the limit the device is closed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "perf-prof/options.h"
#include "perf-prof/sample.h"

namespace perfprof::perf {

class PerfEval {
public:
    // Inactive without --perfeval-*. Throws Error::usage without -i, or for --perfeval-pids
    // naming a process that does not exist.
    explicit PerfEval(const Options& opt);
    bool active() const { return by_cpu_ || by_pid_; }

    // Every sample the device receives (hot path).
    void count(const Sample& s) noexcept {
        ++sampled_;
        if (by_cpu_) {
            if (s.cpu < cpu_listed_.size() && cpu_listed_[s.cpu]) ++per_cpu_[s.cpu];
        } else if (pid_set_.count(s.pid)) {
            ++per_tid_[s.tid];
        }
    }

    // At a tick: prints the line when the interval had samples, and when the limit is
    // exceeded the matching instances after it. Returns true when the device must close.
    bool report(FILE* out, const char* profiler, uint64_t interval_ms);

private:
    bool by_cpu_ = false, by_pid_ = false;
    std::string list_;
    uint64_t limit_ = 0;
    std::vector<bool> cpu_listed_;
    std::vector<uint64_t> per_cpu_;
    std::unordered_set<uint32_t> pid_set_;
    std::unordered_map<uint32_t, uint64_t> per_tid_;
    uint64_t sampled_ = 0;
};

}  // namespace perfprof::perf
