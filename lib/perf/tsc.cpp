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
uint64_t from_mmap_page() {
    perf_event_attr a{};
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.disabled = 1;
    a.exclude_kernel = 1;
    core::Fd fd = open_on_self(a);
    if (!fd) return 0;
    const long page = sysconf(_SC_PAGESIZE);
    void* p = ::mmap(nullptr, static_cast<size_t>(page), PROT_READ, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return 0;
    core::Mmap map(p, static_cast<size_t>(page));
    const auto* pg = static_cast<const perf_event_mmap_page*>(p);
    return pg->cap_user_time ? tsc_khz_from_mult(pg->time_mult, pg->time_shift) : 0;
}

uint64_t from_cpuid() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_max(0, nullptr) < 0x15) return 0;
    __cpuid_count(0x15, 0, a, b, c, d);
    return tsc_khz_from_cpuid15(a, b, c);
}

}  // namespace

uint64_t tsc_khz() {
    if (uint64_t k = from_mmap_page()) return k;
    return from_cpuid();
}

}  // namespace perfprof::perf
