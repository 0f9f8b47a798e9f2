// lib/perf/tsc: the TSC frequency from the kernel's cycles-to-ns factors or CPUID leaf 0x15.
#include "perf/tsc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

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

}  // namespace
}  // namespace perfprof::perf
