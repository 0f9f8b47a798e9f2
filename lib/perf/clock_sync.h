// Event time -> wall clock calibration (SPEC §3.6). Perf timestamps come from the kernel's
// local clock; we learn its offset by stamping a getpid() of our own with a tracepoint
// sample and reading CLOCK_REALTIME and CLOCK_MONOTONIC around it.
#pragma once

#include <memory>

#include "core/time.h"
#include "perf/event_list.h"
#include "perf/ring.h"

namespace perfprof::tep {
class Tep;
}

namespace perfprof::perf {

class ClockSync {
public:
    // Opens the helper event; when the kernel lacks the tracepoint the clock stays
    // uncalibrated and WALL falls back to the current time (no stderr in a normal run).
    explicit ClockSync(tep::Tep& tep);
    // Takes one calibration pair into `clock`. Returns false if it could not.
    bool sync(core::WallClock& clock);

private:
    std::unique_ptr<EventList> events_;
    std::unique_ptr<MappedRing> ring_;
};

}  // namespace perfprof::perf
