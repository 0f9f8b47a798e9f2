// lib/perf/tsc: the TSC frequency from the kernel's cycles-to-ns factors or CPUID leaf 0x15,
// and the perf time <-> TSC conversion of --tsc.
#include "perf/tsc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace perfprof::perf {
namespace {

// The kernel's cyc2ns factors for `khz`: ns = (cycles x mult) >> shift.
uint32_t mult_for(uint64_t khz, int shift) {
    return static_cast<uint32_t>(std::llround(1e6 * std::ldexp(1.0, shift) / static_cast<double>(khz)));
}

// The kernel picks the largest shift whose mult fits 32 bits (about 31 for GHz clocks): that
// pins the frequency to the kHz. Smaller shifts lose precision in mult, not in our division.
TEST(Tsc, FromMultRoundTrips) {
    for (uint64_t khz : {2096037ull, 3000000ull, 1699999ull, 4200123ull}) {
        EXPECT_EQ(tsc_khz_from_mult(mult_for(khz, 31), 31), khz) << khz << " kHz";
        const double coarse = static_cast<double>(tsc_khz_from_mult(mult_for(khz, 21), 21));
        EXPECT_NEAR(coarse, static_cast<double>(khz), 1e-6 * static_cast<double>(khz)) << khz << " kHz";
    }
}

TEST(Tsc, FromMultUnknown) {
    EXPECT_EQ(tsc_khz_from_mult(0, 21), 0u);
    EXPECT_EQ(tsc_khz_from_mult(1000, 64), 0u);
}

TEST(Tsc, FromCpuid15) {
    EXPECT_EQ(tsc_khz_from_cpuid15(2, 176, 24'000'000), 2'112'000u);  // 24 MHz crystal x 88
    EXPECT_EQ(tsc_khz_from_cpuid15(1, 100, 0), 0u);                   // crystal not enumerated
    EXPECT_EQ(tsc_khz_from_cpuid15(0, 100, 24'000'000), 0u);
}

// --tsc: perf ns -> cycles -> perf ns comes back to the ns, or one below it (a cycle is under
// a ns at GHz rates, so cycles -> ns truncates); and a cycle later never maps to an earlier ns.
TEST(Tsc, ConversionRoundTrips) {
    for (uint64_t khz : {2096037ull, 3000000ull, 1000000ull}) {
        TscConversion c;
        c.shift = 31;
        c.mult = mult_for(khz, 31);
        c.time_zero = 123'456'789'000ull;
        uint64_t prev_cycles = 0;
        for (uint64_t ns :
             std::initializer_list<uint64_t>{c.time_zero, c.time_zero + 1, c.time_zero + 999'999'937,
                                             c.time_zero + 86'400ull * 1'000'000'000}) {
            const uint64_t cycles = perf_ns_to_tsc(c, ns);
            const uint64_t back = tsc_to_perf_ns(c, cycles);
            EXPECT_LE(back, ns) << khz;
            EXPECT_GE(back + 1, ns) << khz;
            EXPECT_GE(cycles, prev_cycles);
            prev_cycles = cycles;
        }
        // About khz cycles per ms.
        const double per_ms = double(perf_ns_to_tsc(c, c.time_zero + 1'000'000'000ull)) / 1000.0;
        EXPECT_NEAR(per_ms, double(khz), 1.0) << khz;
    }
}

}  // namespace
}  // namespace perfprof::perf
