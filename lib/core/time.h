// Timestamp formatting and the perf-clock → wall-clock conversion (SPEC §0.2, §3.6).
#pragma once

#include <cstdint>
#include <string>

namespace perfprof::core {

// WALL: "YYYY-MM-DD HH:MM:SS.uuuuuu" in the local time zone, microseconds truncated.
// Negative input is treated as the epoch.
std::string format_wall(int64_t realtime_ns);
// The same, appended to `out`; the date and time of day are computed once per second.
void append_wall(int64_t realtime_ns, std::string& out);

// EVTS: "{sec}.{usec:06}" after rounding to the nearest microsecond.
std::string format_evts(uint64_t ns);
void append_evts(uint64_t ns, std::string& out);

int64_t realtime_now_ns();
int64_t monotonic_now_ns();

// Maps perf-clock ns onto CLOCK_REALTIME (and CLOCK_MONOTONIC onto perf time) from one
// calibration pair taken back-to-back. Pure arithmetic: whoever takes the readings owns the
// clocks and decides when to resynchronise.
class WallClock {
public:
    void calibrate(uint64_t perf_ns, int64_t realtime_ns, int64_t monotonic_ns);
    bool calibrated() const { return calibrated_; }

    // Uncalibrated: the current wall time, as SPEC §3.6 asks for WALL(now) then.
    int64_t to_realtime(uint64_t perf_ns) const;

    // Perf time of a CLOCK_MONOTONIC reading; 0 (the start of perf time, so that no event
    // counts as earlier) when uncalibrated or when the result would lie before perf time 0.
    uint64_t from_monotonic(int64_t monotonic_ns) const;

    // The perf time of the calibration point, 0 when uncalibrated.
    uint64_t calibrated_at_perf() const { return perf_base_; }

private:
    bool calibrated_ = false;
    uint64_t perf_base_ = 0;
    int64_t realtime_base_ = 0;
    int64_t monotonic_base_ = 0;
};

}  // namespace perfprof::core
