// sched::OffCpu: waits from a task's switch-out to its switch-in, with the stack it left with;
// missing switch-ins, --off-cpu-min, weights in sampling periods, dead tasks, losses.
#include "sched/off_cpu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using perfprof::Sample;
using perfprof::sched::OffCpu;

namespace {

struct Got {
    uint32_t pid, tid, cpu;
    std::string state;
    uint64_t start, ns, units;
    std::vector<uint64_t> chain;
};

struct Fixture {
    std::vector<Got> got;
    OffCpu off;
    explicit Fixture(OffCpu::Config cfg = {})
        : off(cfg, [this](const OffCpu::Wait& w) {
              got.push_back({w.pid,
                             w.tid,
                             w.cpu,
                             std::string(w.state),
                             w.start,
                             w.ns,
                             w.units,
                             {w.chain.begin(), w.chain.end()}});
          }) {}

    void out(uint32_t tid, uint64_t t, uint64_t state, std::vector<uint64_t> chain = {0x1000, 0x2000}) {
        Sample s;
        s.pid = 100;
        s.tid = tid;
        s.time = t;
        s.cpu = 1;
        s.callchain = chain.data();
        s.callchain_nr = chain.size();
        off.switched_out(s, state);
    }
};

}  // namespace

TEST(OffCpuState, NamesTheStatesTaskStatePrints) {
    using perfprof::sched::off_cpu_state;
    EXPECT_EQ(off_cpu_state(1), "S");
    EXPECT_EQ(off_cpu_state(2), "D");
    EXPECT_EQ(off_cpu_state(0x82), "D");
    EXPECT_EQ(off_cpu_state(0), "R");
    EXPECT_EQ(off_cpu_state(0x100), "R");  // TASK_REPORT_MAX: preempted
    EXPECT_EQ(off_cpu_state(4), "T");
    EXPECT_EQ(off_cpu_state(8), "t");
    EXPECT_EQ(off_cpu_state(0x80), "I");
    EXPECT_EQ(off_cpu_state(0x40), "P");
    EXPECT_EQ(off_cpu_state(0x10), "");  // dead
    EXPECT_EQ(off_cpu_state(0x20), "");  // zombie
}

TEST(OffCpu, AWaitLastsFromSwitchOutToSwitchIn) {
    Fixture f;
    f.out(7, 1000, 1, {0xaa, 0xbb, 0xcc});
    EXPECT_EQ(f.off.open_waits(), 1u);
    f.off.switched_in(7, 6000);
    ASSERT_EQ(f.got.size(), 1u);
    const Got& g = f.got[0];
    EXPECT_EQ(g.pid, 100u);
    EXPECT_EQ(g.tid, 7u);
    EXPECT_EQ(g.cpu, 1u);
    EXPECT_EQ(g.state, "S");
    EXPECT_EQ(g.start, 1000u);
    EXPECT_EQ(g.ns, 5000u);
    EXPECT_EQ(g.units, 5000u);  // no period: ns
    EXPECT_EQ(g.chain, (std::vector<uint64_t>{0xaa, 0xbb, 0xcc}));
    EXPECT_EQ(f.off.open_waits(), 0u);
    // A second switch-in ends nothing.
    f.off.switched_in(7, 9000);
    EXPECT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.off.missing_switch_ins(), 0u);
}

TEST(OffCpu, SwitchInsOfTasksNeverSeenLeavingAreIgnored) {
    Fixture f;
    f.off.switched_in(9, 100);
    f.off.ran(9, 200);
    EXPECT_TRUE(f.got.empty());
    EXPECT_EQ(f.off.tasks(), 0u);
}

TEST(OffCpu, TheIdleTaskIsNeverOffCpu) {
    Fixture f;
    f.out(0, 100, 0);
    f.off.switched_in(0, 200);
    EXPECT_TRUE(f.got.empty());
}

TEST(OffCpu, AnOnCpuSampleEndsAWaitWhoseSwitchInWasLost) {
    Fixture f;
    f.out(7, 1000, 2);
    f.off.ran(7, 900);  // older than the switch-out: says nothing
    EXPECT_TRUE(f.got.empty());
    f.off.ran(7, 4000);
    ASSERT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.got[0].ns, 3000u);
    EXPECT_EQ(f.got[0].state, "D");
    EXPECT_EQ(f.off.missing_switch_ins(), 1u);
    f.off.ran(7, 5000);  // running: nothing open
    EXPECT_EQ(f.got.size(), 1u);
}

TEST(OffCpu, ASecondSwitchOutEndsTheFirstWait) {
    Fixture f;
    f.out(7, 1000, 1, {1});
    f.out(7, 3000, 2, {2});
    ASSERT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.got[0].ns, 2000u);
    EXPECT_EQ(f.got[0].chain, std::vector<uint64_t>{1});
    EXPECT_EQ(f.off.missing_switch_ins(), 1u);
    f.off.switched_in(7, 3500);
    ASSERT_EQ(f.got.size(), 2u);
    EXPECT_EQ(f.got[1].state, "D");
    EXPECT_EQ(f.got[1].ns, 500u);
    EXPECT_EQ(f.got[1].chain, std::vector<uint64_t>{2});
}

TEST(OffCpu, ShortWaitsAreLeftOutWithAMinimum) {
    Fixture f(OffCpu::Config{.min_ns = 1000});
    f.out(7, 0, 1);
    f.off.switched_in(7, 999);
    f.out(7, 2000, 1);
    f.off.switched_in(7, 3000);
    ASSERT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.got[0].ns, 1000u);
}

TEST(OffCpu, WeightsInPeriodsCarryTheRemainderPerTask) {
    // Ten waits of 0.4 periods each: 4 periods in all, whatever the waits' sizes.
    Fixture f(OffCpu::Config{.period_ns = 1000});
    uint64_t t = 0, units = 0;
    for (int i = 0; i < 10; i++) {
        f.out(7, t, 1);
        f.off.switched_in(7, t + 400);
        t += 1000;
    }
    for (const Got& g : f.got) units += g.units;
    EXPECT_EQ(f.got.size(), 10u);
    EXPECT_EQ(units, 4u);
    // Another task starts with no remainder.
    f.out(8, t, 1);
    f.off.switched_in(8, t + 2500);
    EXPECT_EQ(f.got.back().units, 2u);
}

TEST(OffCpu, DeadTasksOpenNoWaitAndLoseTheirEntry) {
    Fixture f;
    f.out(7, 100, 1);
    f.off.switched_in(7, 200);
    f.out(7, 300, 0x20);  // zombie: leaves for good
    EXPECT_EQ(f.off.open_waits(), 0u);
    EXPECT_EQ(f.off.tasks(), 0u);
    f.off.finish(10'000);
    EXPECT_EQ(f.got.size(), 1u);
}

TEST(OffCpu, LossesDropOpenWaits) {
    Fixture f;
    f.out(7, 100, 1);
    f.out(8, 100, 1);
    f.off.clear();
    EXPECT_EQ(f.off.open_waits(), 0u);
    f.off.switched_in(7, 500);
    f.off.finish(1000);
    EXPECT_TRUE(f.got.empty());
}

TEST(OffCpu, FinishEndsOpenWaitsAtTheEndOfTheRun) {
    Fixture f;
    f.out(7, 100, 1);
    f.out(8, 5000, 2);
    f.off.finish(3000);
    ASSERT_EQ(f.got.size(), 1u);  // 8 left after the given end: no time to count
    EXPECT_EQ(f.got[0].tid, 7u);
    EXPECT_EQ(f.got[0].ns, 2900u);
    EXPECT_EQ(f.off.open_waits(), 0u);
}

TEST(OffCpu, ManyShortLivedTasksDoNotAccumulate) {
    Fixture f;
    // 20000 threads that each wait once, then long after, more: the old entries are swept.
    for (uint32_t tid = 1; tid <= 20000; tid++) {
        f.out(tid, tid, 1);
        f.off.switched_in(tid, tid + 1);
    }
    const uint64_t later = 60'000'000'000ull;
    for (uint32_t tid = 30001; tid <= 30010; tid++) f.out(tid, later + tid, 1);
    EXPECT_LT(f.off.tasks(), 100u);
    EXPECT_EQ(f.off.open_waits(), 10u);
}

TEST(OffCpu, TheSwitchOutRecordStartsTheWait) {
    Fixture f;
    f.out(7, 1000, 1);    // the sched_switch sample, taken while the task still runs
    f.off.left(7, 1300);  // its switch-out record: the task's clock stops here
    f.off.left(8, 1300);  // another task's: nothing open
    f.off.switched_in(7, 5000);
    ASSERT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.got[0].start, 1300u);
    EXPECT_EQ(f.got[0].ns, 3700u);
    f.off.left(7, 6000);  // a record without its sample: no wait to move
    f.off.switched_in(7, 7000);
    EXPECT_EQ(f.got.size(), 1u);
}

TEST(OffCpu, OnCpuTimeAndWaitsShareTheRemainder) {
    Fixture f(OffCpu::Config{.period_ns = 1000});
    // 600 ns on the CPU (no unit yet), a wait of 700 ns (1 unit: 1300), 1500 on the CPU (1 unit: 1800).
    EXPECT_EQ(f.off.on_cpu(7, 600), 0u);
    f.out(7, 0, 1);
    f.off.switched_in(7, 700);
    ASSERT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.got[0].units, 1u);
    EXPECT_EQ(f.off.on_cpu(7, 1500), 1u);
    EXPECT_EQ(f.off.on_cpu(7, 200), 1u);  // 800 + 200
    Fixture ns;                           // no period: ns pass through
    EXPECT_EQ(ns.off.on_cpu(7, 1234), 1234u);
}

TEST(OffCpu, WithoutAnEndTimeOpenWaitsEndAtTheNewestTimeFed) {
    Fixture f;
    f.out(7, 100, 1);
    f.off.ran(8, 900);  // another task's sample: the newest time seen
    f.off.finish(0);
    ASSERT_EQ(f.got.size(), 1u);
    EXPECT_EQ(f.got[0].ns, 800u);
}
