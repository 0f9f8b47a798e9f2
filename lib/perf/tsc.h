// The TSC: its frequency, found silently (SPEC §4.2: profile's fixed ref-cycles period on
// Intel hosts; upstream creates a throw-away KVM VM for it, here the kernel's own conversion
// parameters in a perf mmap page say it, or CPUID's TSC leaf), and the conversion between
// perf time and TSC cycles that --tsc applies (SPEC §1.4).
#pragma once

#include <cstdint>
#include <optional>

namespace perfprof::perf {

// kHz, or 0 when neither source knows it (VMs with kvm-clock, CPUs without leaf 0x15).
uint64_t tsc_khz();

// The frequency behind the mmap page's ns = (cycles x mult) >> shift, rounded to a kHz; 0 for mult 0.
uint64_t tsc_khz_from_mult(uint32_t mult, uint16_t shift);

// CPUID leaf 0x15: TSC = crystal (ecx Hz) x ebx / eax, in kHz; 0 when a field is 0.
uint64_t tsc_khz_from_cpuid15(uint32_t eax, uint32_t ebx, uint32_t ecx);

// The kernel's perf time <-> TSC relation, ns = time_zero + cycles x mult >> shift, as a perf
// mmap page publishes it where sched_clock is a stable TSC (cap_user_time_zero).
struct TscConversion {
    uint64_t time_zero = 0;
    uint32_t mult = 0;
    uint16_t shift = 0;
};
std::optional<TscConversion> tsc_conversion();

uint64_t tsc_to_perf_ns(const TscConversion& c, uint64_t cycles);
// The inverse: tsc_to_perf_ns(c, perf_ns_to_tsc(c, ns)) is ns, or at most one ns below it.
uint64_t perf_ns_to_tsc(const TscConversion& c, uint64_t ns);

}  // namespace perfprof::perf
