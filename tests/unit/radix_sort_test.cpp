#include "core/radix_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

using perfprof::core::radix_sort;
using perfprof::core::radix_sort_by;

TEST(RadixSort, MatchesStdSortOnRandomKeysOfEveryWidth) {
    std::mt19937_64 rng(42);
    for (unsigned bits : {1u, 11u, 12u, 26u, 33u, 48u, 63u, 64u}) {
        for (size_t n : {0u, 1u, 511u, 512u, 5000u}) {
            std::vector<uint64_t> v(n);
            for (uint64_t& x : v) x = bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
            std::vector<uint64_t> want = v;
            std::sort(want.begin(), want.end());
            radix_sort(v);
            EXPECT_EQ(v, want) << bits << " bits, " << n << " keys";
        }
    }
}

TEST(RadixSort, KeysSharingHighBitsAndEqualKeys) {
    std::vector<uint64_t> v;
    for (int i = 0; i < 3000; ++i) v.push_back(0x7f0000000000ull + static_cast<uint64_t>((i * 7919) % 1000));
    std::vector<uint64_t> want = v;
    std::sort(want.begin(), want.end());
    radix_sort(v);
    EXPECT_EQ(v, want);
}

TEST(RadixSort, ByKeyIsStable) {
    std::mt19937_64 rng(7);
    for (size_t n : {100u, 4000u}) {  // both the small-input and the radix path
        std::vector<std::pair<uint64_t, size_t>> v;
        for (size_t i = 0; i < n; ++i) v.push_back({rng() % 50, i});
        radix_sort_by(v, [](const std::pair<uint64_t, size_t>& p) { return p.first; });
        for (size_t i = 1; i < v.size(); ++i) {
            ASSERT_LE(v[i - 1].first, v[i].first);
            if (v[i - 1].first == v[i].first) ASSERT_LT(v[i - 1].second, v[i].second);
        }
    }
}
