#include "core/time.h"

#include <cstdio>
#include <ctime>

#include "core/format.h"

namespace perfprof::core {

namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;

int64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<int64_t>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

// Saturates instead of wrapping: a garbage timestamp must print as a garbage time, not trap UBSan.
int64_t add_sat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

}  // namespace

void append_wall(int64_t realtime_ns, std::string& out) {
    if (realtime_ns < 0) realtime_ns = 0;
    const time_t sec = static_cast<time_t>(realtime_ns / kNsPerSec);
    // localtime_r costs more than the rest of an event line: one conversion per second.
    thread_local time_t cached_sec = -1;
    thread_local char cached[64];
    if (sec != cached_sec) {
        tm t{};
        localtime_r(&sec, &t);
        // int64 ns ends in 2262, so the year always has four digits: 19 characters.
        std::snprintf(cached, sizeof cached, "%04d-%02d-%02d %02d:%02d:%02d", t.tm_year + 1900, t.tm_mon + 1,
                      t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
        cached_sec = sec;
    }
    out.append(cached, 19);
    out += '.';
    append_uint(out, static_cast<uint64_t>(realtime_ns % kNsPerSec / 1000), 6, '0');
}

std::string format_wall(int64_t realtime_ns) {
    std::string s;
    append_wall(realtime_ns, s);
    return s;
}

void append_evts(uint64_t ns, std::string& out) {
    // Same as (ns + 500) / 1000, without wrapping near UINT64_MAX.
    uint64_t us = ns / 1000 + (ns % 1000 >= 500 ? 1 : 0);
    append_uint(out, us / 1000000);
    out += '.';
    append_uint(out, us % 1000000, 6, '0');
}

std::string format_evts(uint64_t ns) {
    std::string s;
    append_evts(ns, s);
    return s;
}

int64_t realtime_now_ns() {
    return clock_ns(CLOCK_REALTIME);
}
int64_t monotonic_now_ns() {
    return clock_ns(CLOCK_MONOTONIC);
}

void WallClock::calibrate(uint64_t perf_ns, int64_t realtime_ns, int64_t monotonic_ns) {
    perf_base_ = perf_ns;
    realtime_base_ = realtime_ns;
    monotonic_base_ = monotonic_ns;
    calibrated_ = true;
}

int64_t WallClock::to_realtime(uint64_t perf_ns) const {
    if (!calibrated_) return realtime_now_ns();
    // Modular subtraction then a signed view: events stamped before the base come out negative.
    return add_sat(realtime_base_, static_cast<int64_t>(perf_ns - perf_base_));
}

uint64_t WallClock::from_monotonic(int64_t monotonic_ns) const {
    if (!calibrated_) return 0;
    int64_t delta;
    if (__builtin_sub_overflow(monotonic_ns, monotonic_base_, &delta))
        return monotonic_ns < monotonic_base_ ? 0 : UINT64_MAX;
    if (delta < 0) {
        uint64_t back = static_cast<uint64_t>(-(delta + 1)) + 1;
        return back >= perf_base_ ? 0 : perf_base_ - back;
    }
    uint64_t fwd = static_cast<uint64_t>(delta);
    return fwd > UINT64_MAX - perf_base_ ? UINT64_MAX : perf_base_ + fwd;
}

}  // namespace perfprof::core
