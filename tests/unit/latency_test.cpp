// lib/output/latency: the quantile sketch (exact while small, log-linear buckets after) and a
// latency row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "output/latency.h"

namespace perfprof::output {
namespace {

double exact_quantile(std::vector<uint64_t> v, double q) {
    std::sort(v.begin(), v.end());
    const double rank = q * double(v.size() - 1);
    const size_t lo = size_t(std::floor(rank)), hi = std::min(lo + 1, v.size() - 1);
    return double(v[lo]) + (double(v[hi]) - double(v[lo])) * (rank - double(lo));
}

TEST(QuantileSketch, EmptyIsZero) {
    QuantileSketch s;
    EXPECT_EQ(s.count(), 0u);
    EXPECT_EQ(s.quantile(0.5), 0.0);
}

TEST(QuantileSketch, ExactForSmallCounts) {
    QuantileSketch s;
    // Eleven sleeps: one long pause, ten of 20 ms.
    s.add(300'000'000);
    for (int i = 0; i < 10; i++) s.add(20'000'000 + uint64_t(i));
    EXPECT_EQ(s.quantile(0), 20'000'000.0);
    EXPECT_EQ(s.quantile(1), 300'000'000.0);
    EXPECT_EQ(s.quantile(0.5), 20'000'005.0);
    std::vector<uint64_t> v{5, 1, 9, 3};
    QuantileSketch t;
    for (uint64_t x : v) t.add(x);
    for (double q : {0.0, 0.25, 0.5, 0.95, 0.99, 1.0})
        EXPECT_DOUBLE_EQ(t.quantile(q), exact_quantile(v, q)) << q;
}

TEST(QuantileSketch, BucketBoundsTileTheRange) {
    EXPECT_EQ(QuantileSketch::index(0), 0u);
    EXPECT_EQ(QuantileSketch::index(127), 127u);
    unsigned prev = QuantileSketch::index(127);
    // Consecutive buckets meet exactly, each value lies in its own bucket.
    for (uint64_t v : {uint64_t(128), uint64_t(129), uint64_t(255), uint64_t(256), uint64_t(1) << 20,
                       (uint64_t(1) << 40) + 12345, UINT64_MAX}) {
        const unsigned i = QuantileSketch::index(v);
        EXPECT_LE(QuantileSketch::lower(i), v);
        EXPECT_GE(QuantileSketch::upper(i), v);
        EXPECT_EQ(QuantileSketch::upper(i - 1) + 1, QuantileSketch::lower(i)) << v;
        EXPECT_GT(i, prev - 1);
        prev = i;
        // At most 1/128 of the value wide.
        EXPECT_LE(double(QuantileSketch::upper(i) - QuantileSketch::lower(i)), double(v) / 128.0);
    }
}

TEST(QuantileSketch, LargeCountsWithinHalfAPercent) {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> dist(std::log(50'000.0), 1.5);  // run delays in ns
    std::vector<uint64_t> v;
    QuantileSketch s;
    for (int i = 0; i < 200'000; i++) {
        const uint64_t x = uint64_t(dist(rng)) + 1;
        v.push_back(x);
        s.add(x);
    }
    EXPECT_EQ(s.count(), v.size());
    for (double q : {0.0, 0.5, 0.95, 0.99, 1.0}) {
        const double want = exact_quantile(v, q), got = s.quantile(q);
        EXPECT_NEAR(got, want, want * 0.005) << q;
    }
    EXPECT_LT(s.memory(), size_t(30'000));
    s.clear();
    EXPECT_EQ(s.count(), 0u);
    s.add(7);
    EXPECT_EQ(s.quantile(0.5), 7.0);
}

TEST(LatencyDist, RowAccounting) {
    LatencyDist d;
    for (uint64_t v : {10u, 30u, 20u}) d.add(v, 15);
    EXPECT_EQ(d.calls, 3u);
    EXPECT_EQ(d.total, 60u);
    EXPECT_EQ(d.min, 10u);
    EXPECT_EQ(d.max, 30u);
    EXPECT_EQ(d.over, 2u);
    EXPECT_EQ(d.sketch.quantile(0.5), 20.0);
    d.clear();
    EXPECT_EQ(d.calls, 0u);
    EXPECT_EQ(d.sketch.count(), 0u);
}

}  // namespace
}  // namespace perfprof::output
