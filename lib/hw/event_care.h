// event-care's checker (SPEC-PROFILERS §P14): fed each sample's running count (its READ
// value), period and time, per event and ring instance, it finds the events lost before the
// ring buffer (the count grew by more than the period) and the samples that arrive out of time
// order within one instance (earlier than the latest sample seen there).
#pragma once

#include <cstdint>
#include <vector>

#include "perf-prof/sample.h"
#include "perf/sample_copy.h"

namespace perfprof::hw {

class EventCareChecker {
public:
    // `keep_latest`: keep a copy of each instance's latest sample (-g prints it beside an
    // out-of-order one).
    explicit EventCareChecker(bool keep_latest = false) : keep_(keep_latest) {}

    struct Verdict {
        bool lost = false;
        uint64_t lost_events = 0;  // count - prev - 1 (SPEC's text)
        bool out_of_order = false;
        uint64_t latest = 0;                    // the instance's latest time, when out of order
        const perf::SampleCopy* latest_sample;  // its copy (keep_latest), else null
    };

    // `count` is the event's running count at this sample, `period` its sample period.
    Verdict check(int event, int instance, uint64_t count, uint64_t period, uint64_t time,
                  const Sample* s = nullptr);

    // Losses and disorders seen so far (for tests and -v).
    uint64_t losses() const { return losses_; }
    uint64_t disorders() const { return disorders_; }

private:
    struct Counter {
        bool seen = false;
        uint64_t prev = 0;
    };
    struct Instance {
        bool seen = false;
        uint64_t latest = 0;
        perf::SampleCopy copy;
    };
    bool keep_;
    std::vector<std::vector<Counter>> counters_;  // [event][instance]
    std::vector<Instance> instances_;
    uint64_t losses_ = 0, disorders_ = 0;
};

}  // namespace perfprof::hw
