#include "heap/outstanding.h"

#include <gtest/gtest.h>

#include <vector>

using perfprof::Sample;
using perfprof::heap::Allocation;
using perfprof::heap::group_by_stack;
using perfprof::heap::LeakGroup;
using perfprof::heap::Outstanding;

namespace {

// An allocation of `ptr` at `time` by process `pid`, `size` bytes, with call chain `chain`.
void add(Outstanding& t, uint64_t ptr, uint64_t time, uint64_t size, std::vector<uint64_t> chain = {},
         uint32_t pid = 1, const char* comm = nullptr) {
    Sample s;
    s.time = time;
    s.pid = s.tid = pid;
    s.callchain = chain.empty() ? nullptr : chain.data();
    s.callchain_nr = chain.size();
    Allocation& a = t.alloc(ptr);
    a.sample.assign(s);
    a.size = size;
    a.comm = comm ? t.intern(comm) : nullptr;
}

std::vector<uint64_t> ptrs(const Outstanding& t) {
    std::vector<uint64_t> v;
    for (const Outstanding::Entry* e : t.by_time()) v.push_back(e->first);
    return v;
}

}  // namespace

TEST(Outstanding, FreeForgetsAndUnknownPointersAreIgnored) {
    Outstanding t;
    add(t, 0x100, 10, 8);
    add(t, 0x200, 20, 8);
    EXPECT_TRUE(t.free(0x100));
    EXPECT_FALSE(t.free(0x100));  // freed twice
    EXPECT_FALSE(t.free(0x999));  // allocated before we started
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(ptrs(t), (std::vector<uint64_t>{0x200}));
    EXPECT_GT(t.bytes(), 0u);
    t.clear();
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(t.bytes(), 0u);
}

TEST(Outstanding, SamePointerAgainReplaces) {
    Outstanding t;
    add(t, 0x100, 10, 8);
    add(t, 0x100, 30, 16);
    ASSERT_EQ(t.size(), 1u);
    const Outstanding::Entry* e = t.by_time().front();
    EXPECT_EQ(e->second.sample.time, 30u);
    EXPECT_EQ(e->second.size, 16u);
}

TEST(Outstanding, ByTimeThenPointer) {
    Outstanding t;
    add(t, 0x300, 20, 1);
    add(t, 0x200, 10, 1);
    add(t, 0x500, 20, 1);
    add(t, 0x100, 20, 1);
    add(t, 0x400, 5, 1);
    EXPECT_EQ(ptrs(t), (std::vector<uint64_t>{0x400, 0x200, 0x100, 0x300, 0x500}));
}

TEST(Outstanding, GroupsByChainAndProcess) {
    Outstanding t;
    add(t, 0x1, 1, 100, {7, 8, 9}, 10, "a");
    add(t, 0x2, 2, 50, {7, 8, 9}, 10, "b");
    add(t, 0x3, 3, 30, {7, 8, 9}, 11, "a");
    add(t, 0x4, 4, 25, {7, 8}, 10, "a");
    add(t, 0x5, 5, 1000, {}, 10, "a");  // no chain: not grouped

    std::vector<LeakGroup> g = group_by_stack(t.by_time(), false, true);
    ASSERT_EQ(g.size(), 2u);  // {7,8} and {7,8,9}, in key order
    EXPECT_EQ(g[0].chain, (std::vector<uint64_t>{7, 8}));
    EXPECT_EQ(g[0].bytes, 25u);
    EXPECT_EQ(g[1].chain, (std::vector<uint64_t>{7, 8, 9}));
    EXPECT_EQ(g[1].bytes, 180u);
    EXPECT_EQ(g[1].objects, 3u);
    EXPECT_EQ(g[1].pid, 0u);
    ASSERT_EQ(g[1].comms.size(), 2u);
    EXPECT_EQ(g[1].comms[0].comm, "a");
    EXPECT_EQ(g[1].comms[0].bytes, 130u);
    EXPECT_EQ(g[1].comms[0].objects, 2u);
    EXPECT_EQ(g[1].comms[1].comm, "b");

    // User frames resolve per process: the same chain in two processes is two groups.
    g = group_by_stack(t.by_time(), true, false);
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[0].pid, 10u);
    EXPECT_EQ(g[0].chain, (std::vector<uint64_t>{7, 8}));
    EXPECT_EQ(g[1].pid, 10u);
    EXPECT_EQ(g[1].bytes, 150u);
    EXPECT_TRUE(g[1].comms.empty());
    EXPECT_EQ(g[2].pid, 11u);
    EXPECT_EQ(g[2].bytes, 30u);
}
