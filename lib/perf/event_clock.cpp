#include "perf/event_clock.h"

#include <cstdio>
#include <ctime>

namespace perfprof::perf {

EventClock::EventClock(const Options& opt, tep::Tep& tep)
    : monotonic_(opt.monotonic), offset_(opt.clock_offset) {
    if (opt.tsc) {
        if (monotonic_)
            std::fputs(
                "perf-prof: TSC conversion does not support the --monotonic option; timestamps stay "
                "CLOCK_MONOTONIC ns\n",
                stderr);
        else if (!(tsc_ = tsc_conversion()))
            std::fputs(
                "perf-prof: TSC conversion is not supported: the kernel publishes no TSC conversion "
                "in the perf mmap page (cap_user_time_zero is 0, as under kvm-clock or an unstable "
                "TSC); timestamps stay in ns\n",
                stderr);
    }
    if (!monotonic_) sync_ = std::make_unique<ClockSync>(tep);
    sync();
}

void EventClock::apply(perf_event_attr& a) const {
    if (!monotonic_) return;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
}

void EventClock::sync() {
    if (sync_) {
        sync_->sync(wall_);
        return;
    }
    // Kernel time is CLOCK_MONOTONIC itself: one pair of readings calibrates it.
    const int64_t r0 = core::realtime_now_ns(), m = core::monotonic_now_ns(), r1 = core::realtime_now_ns();
    wall_.calibrate(uint64_t(m), r0 + (r1 - r0) / 2, m);
}

}  // namespace perfprof::perf
