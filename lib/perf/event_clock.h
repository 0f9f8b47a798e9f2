// Event time (SPEC §1.4, §3.6): the clock the kernel stamps samples with (perf's local clock,
// or CLOCK_MONOTONIC with --monotonic), what profilers see (converted to TSC cycles with
// --tsc, shifted by --clock-offset), and WALL(ev) for either.
//
// The session keeps raw kernel times for ordering and the atomic-enable cut-off, and hands
// profilers converted ones; converted times go back through to_raw() when printed as WALL.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "core/time.h"
#include "perf-prof/options.h"
#include "perf/clock_sync.h"
#include "perf/tsc.h"

namespace perfprof::tep {
class Tep;
}

namespace perfprof::perf {

class EventClock {
public:
    // --tsc where the kernel publishes no conversion, or with --monotonic, is dropped with
    // one line on stderr (SPEC §1.5.1); everything else applies silently.
    EventClock(const Options& opt, tep::Tep& tep);

    // The clock bits every event of the session opens with.
    void apply(perf_event_attr& a) const;
    // (Re)calibrates the wall clock (SPEC §3.6).
    void sync();
    bool calibrated() const { return wall_.calibrated(); }

    // Kernel time -> the time profilers see and print, and back.
    uint64_t convert(uint64_t raw) const {
        if (!tsc_) return raw + offset_;
        return perf_ns_to_tsc(*tsc_, raw) + offset_;
    }
    uint64_t to_raw(uint64_t converted) const {
        const uint64_t t = converted - offset_;
        return tsc_ ? tsc_to_perf_ns(*tsc_, t) : t;
    }
    bool tsc() const { return tsc_.has_value(); }

    // CLOCK_REALTIME ns of a converted event time; the current time while uncalibrated.
    int64_t realtime(uint64_t converted) const { return wall_.to_realtime(to_raw(converted)); }
    // The kernel time of a CLOCK_MONOTONIC reading (0 while uncalibrated).
    uint64_t raw_from_monotonic(int64_t monotonic_ns) const { return wall_.from_monotonic(monotonic_ns); }

private:
    bool monotonic_ = false;
    uint64_t offset_ = 0;
    std::optional<TscConversion> tsc_;
    std::unique_ptr<ClockSync> sync_;  // perf clock only: CLOCK_MONOTONIC needs no helper event
    core::WallClock wall_;
};

}  // namespace perfprof::perf
