// The user-space side of the heap probes' sampling: the table of exponential quantiles the eBPF
// program draws its gaps from, and the keep probability its countdown gives (the countdown of
// bpf/heap.bpf.c replayed here with the same table and a seeded generator).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "heap/heap_probes.h"

using namespace perfprof::heap;

namespace {

double mean(const std::vector<uint64_t>& v) {
    return double(std::accumulate(v.begin(), v.end(), uint64_t(0))) / double(v.size());
}

// bpf/heap.bpf.c's sampled(): one thread's countdown over a stream of allocations.
struct Countdown {
    const std::vector<uint64_t>& gaps;
    std::mt19937 rng{12345};
    int64_t left = draw();
    int64_t draw() { return int64_t(gaps[rng() % gaps.size()]); }
    bool keep(uint64_t size) {
        left -= int64_t(size);
        if (left > 0) return false;
        left = draw();
        return true;
    }
};

}  // namespace

TEST(HeapProbeSampling, QuantileMeanIsTheRate) {
    for (uint64_t rate : {4096ull, 512 * 1024ull, 10'000'000ull}) {
        const std::vector<uint64_t> gaps = sample_gap_quantiles(rate);
        ASSERT_EQ(gaps.size(), kSampleQuantiles);
        EXPECT_NEAR(mean(gaps), double(rate), 0.005 * double(rate)) << rate;
    }
}

TEST(HeapProbeSampling, QuantilesDescendFromTheCutTail) {
    const uint64_t rate = 1 << 20;
    const std::vector<uint64_t> gaps = sample_gap_quantiles(rate, 1024);
    EXPECT_TRUE(std::is_sorted(gaps.rbegin(), gaps.rend()));
    // The largest gap is where the tail is cut: ln(2N) rate.
    EXPECT_NEAR(double(gaps.front()), std::log(2.0 * 1024) * rate, 1.0);
    EXPECT_NEAR(double(gaps.back()), -std::log(1023.5 / 1024) * rate, 1.0);
    // The median gap is ln 2 rate.
    EXPECT_NEAR(double(gaps[511] + gaps[512]) / 2, std::log(2.0) * rate, 0.002 * rate);
}

TEST(HeapProbeSampling, GapsAreAtLeastOneByte) {
    // A 0-byte allocation must never be kept (probability 1 - exp(0)): the countdown never
    // starts at 0, even at a rate where the smallest quantiles round to 0.
    for (uint64_t g : sample_gap_quantiles(1, 64)) EXPECT_GE(g, 1u);
}

TEST(HeapProbeSampling, KeptWithProbabilityOneMinusExp) {
    // Sizes mixed in one stream: the countdown is memoryless, so each size is kept with its
    // own probability 1 - exp(-s/rate) whatever the sizes before it.
    const uint64_t rate = 64 * 1024;
    const std::vector<uint64_t> gaps = sample_gap_quantiles(rate);
    const uint64_t sizes[] = {512, 16 * 1024, 64 * 1024, 256 * 1024};
    Countdown c{gaps};
    std::mt19937 order(7);
    uint64_t kept[4] = {}, seen_n[4] = {};
    for (int i = 0; i < 400'000; i++) {
        const unsigned k = order() % 4;
        seen_n[k]++;
        kept[k] += c.keep(sizes[k]);
    }
    for (int k = 0; k < 4; k++) {
        const double p = 1 - std::exp(-double(sizes[k]) / rate);
        const double seen = double(kept[k]) / double(seen_n[k]);
        // Binomial standard deviation over 100,000 draws is at most 0.0016.
        EXPECT_NEAR(seen, p, 0.006 + 0.02 * p) << sizes[k];
    }
}

TEST(HeapProbeSampling, UnsampledBytesEstimateTheTotal) {
    // What heap_v2 readers do with the kept allocations: each stands for 1/p of its size.
    const uint64_t rate = 4096;
    const std::vector<uint64_t> gaps = sample_gap_quantiles(rate);
    Countdown c{gaps};
    const uint64_t size = 1024, n = 200'000;
    uint64_t kept = 0;
    for (uint64_t i = 0; i < n; i++) kept += c.keep(size);
    const double estimate = double(kept * size) / (1 - std::exp(-double(size) / rate));
    EXPECT_NEAR(estimate, double(n * size), 0.02 * double(n * size));
}
