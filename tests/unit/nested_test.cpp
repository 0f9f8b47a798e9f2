// lib/pairing/nested: the stack of open entries per key and the call tree (SPEC-PROFILERS §P7).
#include "pairing/nested.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace perfprof::pairing {
namespace {

struct Rec : NestedStacks::Sink {
    std::vector<std::pair<int, int>> calls;
    std::vector<std::tuple<int, uint64_t, uint64_t, uint64_t>> rets;  // list, t1, t2, key
    void called(int caller, int list) override { calls.emplace_back(caller, list); }
    void returned(int list, const Sample& e, const Sample& r, uint64_t key) override {
        rets.emplace_back(list, e.time, r.time, key);
    }
};

Sample at(uint64_t t) {
    Sample s{};
    s.time = t;
    return s;
}

TEST(NestedStacks, EntriesNestAndReturnsCloseTheNewestOfTheirList) {
    Rec r;
    NestedStacks st(r);
    st.entry(0, at(1), 7);
    st.entry(1, at(2), 7);
    st.entry(1, at(3), 7);  // two open entries of list 1 coexist
    st.entry(0, at(4), 9);  // another key: a root call
    st.exit(1, at(5), 7);
    st.exit(1, at(6), 7);
    st.exit(0, at(7), 7);
    st.exit(0, at(8), 9);
    EXPECT_EQ(r.calls, (std::vector<std::pair<int, int>>{{-1, 0}, {0, 1}, {1, 1}, {-1, 0}}));
    ASSERT_EQ(r.rets.size(), 4u);
    EXPECT_EQ(r.rets[0], std::make_tuple(1, 3ull, 5ull, 7ull));
    EXPECT_EQ(r.rets[1], std::make_tuple(1, 2ull, 6ull, 7ull));
    EXPECT_EQ(r.rets[2], std::make_tuple(0, 1ull, 7ull, 7ull));
    EXPECT_EQ(r.rets[3], std::make_tuple(0, 4ull, 8ull, 9ull));
    EXPECT_EQ(st.open(), 0u);
}

TEST(NestedStacks, ReturnWithoutEntryOrOlderThanItIsNotAPair) {
    Rec r;
    NestedStacks st(r);
    st.exit(0, at(1), 1);
    st.entry(0, at(10), 1);
    st.exit(0, at(5), 1);  // older than the entry: removed, not paired
    EXPECT_TRUE(r.rets.empty());
    EXPECT_EQ(st.open(), 0u);
    st.entry(0, at(10), 1);
    st.clear();
    EXPECT_EQ(st.open(), 0u);
}

TEST(CallTree, TreeWithRecursionAndMove) {
    CallTree t({"a", "b", "c"});
    std::string moved;
    t.called(-1, 0, moved);
    t.called(0, 1, moved);
    t.called(1, 2, moved);
    t.called(2, 2, moved);  // c calls itself: recursion marks c
    EXPECT_TRUE(moved.empty());
    EXPECT_TRUE(t.dirty());
    EXPECT_EQ(t.tree(), "a\n  |-b\n  |   |-c R\n");
    EXPECT_FALSE(t.dirty());
    t.called(0, 2, moved);  // c now called by a: the old tree is printed, c moves
    EXPECT_EQ(moved, "a\n  |-b\n  |   |-c R\n");
    EXPECT_EQ(t.tree(), "a\n  |-b\n  |-c R\n");
}

TEST(CallTree, CallDelayTable) {
    CallTree t({"softirq_entry", "timer_expire_entry"});
    std::string moved;
    t.called(-1, 0, moved);
    t.called(0, 1, moved);
    t.latency(0, 3000, 0);
    t.latency(0, 5000, 0);
    const std::string s = t.table("us");
    // FL = max(13, 4 * 1 + 18) = 22
    const std::string head = std::string(9, ' ') + "function call R    calls        total(us)      min(us)      p50(us)"
                                                   "      p95(us)      p99(us)      max(us)\n";
    ASSERT_EQ(s.substr(0, head.size()), head);
    EXPECT_NE(s.find("\nsoftirq_entry            " "       2            8.000        3.000"), std::string::npos) << s;
    // A node without pairs prints only its name part.
    EXPECT_NE(s.find("\n  |-timer_expire_entry  \n"), std::string::npos) << s;
    EXPECT_FALSE(t.dirty());
}

}  // namespace
}  // namespace perfprof::pairing
