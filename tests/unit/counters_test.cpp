// lib/counters: the slot/round series of hrcount and stat, group-read deltas, percpu-stat's
// table and hrtimer's count expressions, fed synthetic reads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "counters/count_expr.h"
#include "counters/percpu_table.h"
#include "counters/series.h"
#include "filter/expr.h"

using namespace perfprof::counters;

namespace {

const std::string kWall = "WALL ";

Series two_cpus(uint64_t slots, bool perins = false) {
    return Series({"sys:a", "b"}, {"[000] ", "[001] "}, {{true, true}, {true, false}}, slots, 100, perins);
}

}  // namespace

TEST(CountersSeries, SlotsPerRound) {
    EXPECT_EQ(slots_per_round(1000, 100), 10u);
    EXPECT_EQ(slots_per_round(1000, 1000), 1u);
    EXPECT_EQ(slots_per_round(100, 1000), 10u);
    EXPECT_EQ(slots_per_round(1000, 300), 3u);
    EXPECT_EQ(slots_per_round(0, 300), 1u);
}

TEST(CountersSeries, RoundPrintedWhenEveryInstanceCompletesIt) {
    Series s = two_cpus(2);
    std::string out;
    s.add(0, 100, {1, 2});
    s.add(0, 100, {3, 4});
    EXPECT_EQ(s.print_ready(kWall, out), 0);  // CPU 1 has not finished the round
    s.add(1, 100, {5, 9});                    // b is not on CPU 1: its 9 is not counted
    s.add(1, 100, {7, 0});
    EXPECT_EQ(s.print_ready(kWall, out), 1);
    EXPECT_EQ(out,
              "WALL \n"
              "sys:a  6|10 | total 16\n"
              "    b  2| 4 | total 6\n");
    out.clear();
    EXPECT_EQ(s.print_ready(kWall, out), 0);
}

TEST(CountersSeries, PerInstanceLinesAndWidthsGrow) {
    Series s = two_cpus(1, true);
    std::string out;
    s.add(0, 100, {12345, 1});
    s.add(1, 100, {2, 0});
    s.print_ready(kWall, out);
    EXPECT_EQ(out,
              "WALL \n"
              "[000] sys:a 12345 | total 12345\n"
              "[000]     b     1 | total 1\n"
              "[001] sys:a     2 | total 2\n");
    out.clear();
    s.add(0, 100, {1, 1});
    s.add(1, 100, {1, 0});
    s.print_ready(kWall, out);  // CW stays at the largest value ever seen
    EXPECT_NE(out.find("[000] sys:a     1 | total 1\n"), std::string::npos);
}

TEST(CountersSeries, LateTimerAdvancesThePosition) {
    Series s = two_cpus(4);
    EXPECT_FALSE(s.add(0, 150, {1, 0}));
    EXPECT_EQ(s.position(0), 1u);
    EXPECT_TRUE(s.add(0, 300, {1, 0}));  // 3 periods: 2 slots skipped
    EXPECT_EQ(s.position(0), 4u);
    for (int i = 0; i < 4; ++i) s.add(1, 100, {0, 0});
    std::string out;
    EXPECT_EQ(s.print_ready(kWall, out), 1);
    EXPECT_NE(out.find("sys:a  1| 0| 0| 1 | total 2"), std::string::npos) << out;
}

TEST(CountersSeries, TotalIsWhatWasAddedSinceTheLastLine) {
    Series s = two_cpus(1);
    s.add(0, 100, {1, 0});
    s.add(0, 100, {2, 0});  // CPU 0 is already in the next round
    s.add(1, 100, {4, 0});
    std::string out;
    EXPECT_EQ(s.print_ready(kWall, out), 1);
    EXPECT_NE(out.find("sys:a  5 | total 7"), std::string::npos) << out;
    out.clear();
    s.add(1, 100, {0, 0});
    EXPECT_EQ(s.print_ready(kWall, out), 1);
    EXPECT_NE(out.find("sys:a  2 | total 0"), std::string::npos) << out;
}

TEST(CountersSeries, ResetRule) {
    Series s = two_cpus(4);
    for (int i = 0; i < 2; ++i) s.add(0, 100, {1, 1});
    s.add(1, 100, {1, 0});
    EXPECT_FALSE(s.needs_reset());  // 1 position ahead, H/2 = 2
    s.add(0, 100, {1, 1});
    EXPECT_TRUE(s.needs_reset());
    s.clear();
    EXPECT_EQ(s.position(0), 0u);
    EXPECT_EQ(s.round(), 0u);
    EXPECT_FALSE(s.needs_reset());
    Series one({"a"}, {"[000] "}, {{true}}, 4, 100, false);  // a single instance never resets
    for (int i = 0; i < 9; ++i) one.add(0, 100, {1});
    EXPECT_FALSE(one.needs_reset());
}

TEST(CountersGroupDeltas, MembersByPresenceFirstReadIsABaseline) {
    std::vector<uint64_t> prev(4, 0), deltas(3, 0);
    bool first = true;
    // Leader 1000, then members 0 and 2 (member 1 is not on this CPU).
    EXPECT_EQ(group_deltas({1000, 10, 30}, {0, 2}, prev, deltas, first), 0u);
    EXPECT_FALSE(first);
    EXPECT_EQ(deltas, (std::vector<uint64_t>{0, 0, 0}));
    EXPECT_EQ(group_deltas({1600, 15, 37}, {0, 2}, prev, deltas, first), 600u);
    EXPECT_EQ(deltas, (std::vector<uint64_t>{5, 0, 7}));
    EXPECT_EQ(group_deltas({1700, 15, 36}, {0, 2}, prev, deltas, first), 100u);  // never negative
    EXPECT_EQ(deltas, (std::vector<uint64_t>{0, 0, 0}));
}

TEST(CountersPercpu, DeltasHalvedIdleAndAllRow) {
    PercpuTable t({" SOFT csw", "minflt", " idle"}, {false, false, true}, {"[000]", "[001]"});
    t.update(0, 0, 10);
    t.update(0, 2, 8);
    t.update(1, 1, 3);
    EXPECT_EQ(t.delta(0, 2), 4u);
    t.update(0, 0, 15);
    t.update(0, 2, 8);
    t.update(1, 1, 2);  // smaller than stored: 0
    EXPECT_EQ(t.delta(0, 0), 5u);
    EXPECT_EQ(t.delta(1, 1), 0u);
    std::string out;
    t.print("WALL ", out);
    EXPECT_EQ(out,
              "WALL \n"
              "[CPU]  SOFT csw minflt  idle \n"
              "[000]         5      0     0 \n"
              "[001]         0      0     0 \n"
              "[ALL]         5      0     0 \n");
}

TEST(CountersExpr, VariablesAndPeriod) {
    CountExpr e("sched_switch>=1000 && period > 5", {"sched_switch", "wake"});
    EXPECT_TRUE(e.eval({1000, 0}, 6));
    EXPECT_FALSE(e.eval({999, 0}, 6));
    EXPECT_FALSE(e.eval({1000, 0}, 5));
    CountExpr w("wake==0", {"sched_switch", "wake"});
    EXPECT_TRUE(w.eval({3, 0}, 1));
    EXPECT_FALSE(w.eval({3, 1}, 1));
    EXPECT_THROW(CountExpr("nope==1", {"a"}), perfprof::filter::CompileError);
}
