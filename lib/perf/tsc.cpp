#include "perf/tsc.h"

#include <cpuid.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fd.h"
#include "perf/event_list.h"

namespace perfprof::perf {

uint64_t tsc_khz_from_mult(uint32_t mult, uint16_t shift) {
    if (mult == 0 || shift > 63) return 0;
    // cycles per ns = 2^shift / mult; x 10^6 for kHz, rounded.
    const unsigned __int128 num = static_cast<unsigned __int128>(1'000'000) << shift;
    return static_cast<uint64_t>((num + mult / 2) / mult);
}

uint64_t tsc_khz_from_cpuid15(uint32_t eax, uint32_t ebx, uint32_t ecx) {
    if (eax == 0 || ebx == 0 || ecx == 0) return 0;
    return static_cast<uint64_t>(ecx) * ebx / eax / 1000;
}

namespace {

// The user-time fields of a dummy event's mmap page: filled where sched_clock is the TSC.
struct TimeFields {
    bool cap_time = false, cap_time_zero = false;
    TscConversion conv;
};
std::optional<TimeFields> read_mmap_page() {
    perf_event_attr a{};
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.disabled = 1;
    a.exclude_kernel = 1;
    core::Fd fd = open_on_self(a);
    if (!fd) return std::nullopt;
    const long page = sysconf(_SC_PAGESIZE);
    void* p = ::mmap(nullptr, static_cast<size_t>(page), PROT_READ, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return std::nullopt;
    core::Mmap map(p, static_cast<size_t>(page));
    const auto* pg = static_cast<const perf_event_mmap_page*>(p);
    TimeFields f;
    f.cap_time = pg->cap_user_time;
    f.cap_time_zero = pg->cap_user_time_zero;
    f.conv.time_zero = pg->time_zero;
    f.conv.mult = pg->time_mult;
    f.conv.shift = pg->time_shift;
    return f;
}

uint64_t from_mmap_page() {
    const std::optional<TimeFields> f = read_mmap_page();
    return f && f->cap_time ? tsc_khz_from_mult(f->conv.mult, f->conv.shift) : 0;
}

uint64_t from_cpuid() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0, nullptr) < 0x15) return 0;
    __cpuid_count(0x15, 0, a, b, c, d);
    return tsc_khz_from_cpuid15(a, b, c);
}

}  // namespace

std::optional<TscConversion> tsc_conversion() {
    const std::optional<TimeFields> f = read_mmap_page();
    if (!f || !f->cap_time_zero || f->conv.mult == 0 || f->conv.shift > 63) return std::nullopt;
    return f->conv;
}

uint64_t tsc_to_perf_ns(const TscConversion& c, uint64_t cycles) {
    // The kernel's split, so that no product overflows: whole 2^shift units, then the rest.
    const uint64_t quot = cycles >> c.shift, rem = cycles & ((uint64_t(1) << c.shift) - 1);
    return c.time_zero + quot * c.mult + ((rem * c.mult) >> c.shift);
}

uint64_t perf_ns_to_tsc(const TscConversion& c, uint64_t ns) {
    const uint64_t t = ns - c.time_zero;
    const uint64_t quot = t / c.mult, rem = t % c.mult;
    return (quot << c.shift) + (rem << c.shift) / c.mult;
}

uint64_t tsc_khz() {
    if (uint64_t k = from_mmap_page()) return k;
    return from_cpuid();
}

}  // namespace perfprof::perf
