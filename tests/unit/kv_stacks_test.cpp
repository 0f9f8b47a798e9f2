#include "stack/kv_stacks.h"

#include <gtest/gtest.h>

#include <string>

using perfprof::stack::KvStacks;

namespace {
struct Bytes {
    uint64_t bytes;
};
std::vector<uint64_t> V(std::initializer_list<uint64_t> l) {
    return l;
}
}  // namespace

TEST(KvStacks, IdenticalChainsCollapse) {
    KvStacks<Bytes> kv;
    auto a = V({1, 2, 3}), b = V({1, 2}), c = V({1, 2, 3});
    kv.insert(a).bytes += 10;
    kv.insert(b).bytes += 5;
    kv.insert(c).bytes += 7;
    EXPECT_EQ(kv.size(), 2u);
    std::vector<std::pair<size_t, uint64_t>> seen;
    kv.for_each([&](std::span<const uint64_t> k, const auto& e) { seen.emplace_back(k.size(), e.value.bytes); });
    // Key order: {1,2} before {1,2,3} (prefix, shorter first).
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0], (std::pair<size_t, uint64_t>{2, 5}));
    EXPECT_EQ(seen[1], (std::pair<size_t, uint64_t>{3, 17}));
}

TEST(KvStacks, SortedByCountOrValueWithLimit) {
    KvStacks<Bytes> kv;
    for (int i = 0; i < 3; i++) kv.insert(V({9})).bytes += 1;
    kv.insert(V({5})).bytes += 100;
    for (int i = 0; i < 2; i++) kv.insert(V({7})).bytes += 1;
    std::vector<uint64_t> order;
    kv.for_each_sorted([&](std::span<const uint64_t> k, const auto&) { order.push_back(k[0]); });
    EXPECT_EQ(order, V({9, 7, 5}));
    order.clear();
    kv.for_each_sorted([&](std::span<const uint64_t> k, const auto&) { order.push_back(k[0]); }, 1,
                       [](const auto& a, const auto& b) { return a.value.bytes > b.value.bytes; });
    EXPECT_EQ(order, V({5}));
    kv.clear();
    EXPECT_EQ(kv.size(), 0u);
}
