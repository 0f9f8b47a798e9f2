// The TSC frequency, found silently (SPEC §4.2: profile's fixed ref-cycles period on Intel
// hosts). Upstream creates a throw-away KVM VM for it; here the kernel's own conversion
// parameters in a perf mmap page say it, or CPUID's TSC leaf.
#pragma once

#include <cstdint>

namespace perfprof::perf {

// kHz, or 0 when neither source knows it (VMs with kvm-clock, CPUs without leaf 0x15).
uint64_t tsc_khz();

// The frequency behind the mmap page's ns = (cycles x mult) >> shift, rounded to a kHz; 0 for mult 0.
uint64_t tsc_khz_from_mult(uint32_t mult, uint16_t shift);

// CPUID leaf 0x15: TSC = crystal (ecx Hz) x ebx / eax, in kHz; 0 when a field is 0.
uint64_t tsc_khz_from_cpuid15(uint32_t eax, uint32_t ebx, uint32_t ecx);

}  // namespace perfprof::perf
