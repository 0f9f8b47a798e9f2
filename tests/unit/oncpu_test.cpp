// oncpu's run accounting (sched/oncpu): synthetic switches per CPU and runtimes per thread,
// and the tables of SPEC §P3.
#include <gtest/gtest.h>

#include <string>

#include "sched/oncpu.h"

namespace perfprof::sched {
namespace {

constexpr uint64_t ms = 1000000;

TEST(OncpuCpuRuns, AccountsRunsBetweenSwitchesOfTheSameTask) {
    CpuRuns r;
    r.on_switch(1, 1 * ms, 0, 42, "swapper/1", true, false);  // first: only the start
    r.on_switch(1, 11 * ms, 42, 7, "spin", true, false);      // 42 ran 10 ms
    r.on_switch(1, 14 * ms, 7, 42, "bash", true, false);      // 7 ran 3 ms
    r.on_switch(1, 30 * ms, 42, 0, "spin", true, false);      // 42 ran 16 ms
    r.on_switch(1, 40 * ms, 0, 9, "swapper/1", true, false);  // idle: not accounted
    r.on_switch(0, 5 * ms, 9, 3, "x", true, false);           // CPU 0: first sample
    r.on_switch(0, 6 * ms, 4, 3, "y", true, false);           // prev 4 != 3: restart, nothing
    EXPECT_EQ(r.table(false, false),
              "CPU SUM(ms) COMM:TID(ms)\n"
              "001 29      spin:42(26.0ms) bash:7(3.0ms) \n");
    EXPECT_TRUE(r.empty());  // cleared after printing
    EXPECT_EQ(r.table(false, false), "");
}

TEST(OncpuCpuRuns, DetailOnlyCommPrioAndLoss) {
    CpuRuns r;
    r.on_switch(0, 1 * ms, 5, 6, "a", true, true);
    r.on_switch(0, 3 * ms, 6, 5, "w", true, true);   // w ran 2
    r.on_switch(0, 4 * ms, 5, 8, "a", false, true);  // prio not in list: skipped
    r.on_switch(0, 9 * ms, 8, 6, "w", true, true);   // another w (tid 8) ran 5: same name row
    r.lost(0);
    r.on_switch(0, 50 * ms, 6, 5, "w", true, true);  // after a loss: only a new start
    EXPECT_EQ(r.table(true, true),
              "CPU SUM(ms/sws) COMM(ms/sws/max_ms)\n"
              "000 7ms/2       w(7.0ms/2/5.0ms) \n");
}

TEST(OncpuCpuRuns, TiesByTid) {
    CpuRuns r;
    r.on_switch(2, 1 * ms, 1, 9, "a", true, false);
    r.on_switch(2, 2 * ms, 9, 3, "b", true, false);
    r.on_switch(2, 3 * ms, 3, 1, "c", true, false);
    EXPECT_EQ(r.table(false, false), "CPU SUM(ms) COMM:TID(ms)\n002 2       c:3(1.0ms) b:9(1.0ms) \n");
}

TEST(OncpuThreadRuns, PerThreadCpusInAttachOrder) {
    ThreadRuns t;
    t.add(20, 1, "worker", 3 * ms);
    t.add(10, 0, "main", 1 * ms);
    t.add(20, 0, "worker", 2500000);
    t.add(20, 1, "worker", 1 * ms);
    EXPECT_EQ(t.table({20, 10}),
              "THREAD COMM             SUM(ms) CPUS(ms) \n"
              "20     worker           6       0(2ms) 1(4ms) \n"
              "10     main             1       0(1ms) \n");
    EXPECT_TRUE(t.empty());
}

}  // namespace
}  // namespace perfprof::sched
