// The plans of hrcount, stat, hrtimer, irq-off and percpu-stat against the recorded formats.
#include <gtest/gtest.h>

#include "perf-prof/error.h"
#include "plan_context.h"

using namespace perfprof;
using perfprof::unit::PlanContext;

TEST(CountersPlan, HrcountLeaderAndMembers) {
    PlanContext c({"hrcount", "-e", "sched:sched_switch//cpus=0/,sched:sched_wakeup/target_cpu==0/", "--period",
                   "50ms", "-i", "1000"});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 3u);
    const EventSpec& l = p.events[0];
    EXPECT_EQ(l.attr.type, uint32_t(PERF_TYPE_SOFTWARE));
    EXPECT_EQ(l.attr.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
    EXPECT_EQ(l.attr.sample_period, 50000000u);
    EXPECT_EQ(l.attr.freq, 0u);
    EXPECT_EQ(l.attr.read_format, uint64_t(PERF_FORMAT_ID | PERF_FORMAT_GROUP));
    EXPECT_TRUE(l.attr.sample_type & PERF_SAMPLE_READ);
    EXPECT_EQ(l.attr.wakeup_events, 20u);  // H = 1000 / 50
    EXPECT_EQ(l.group_leader, -1);
    EXPECT_FALSE(l.start_disabled);  // the session enables the members first (Opener::enable_planned)
    for (size_t e = 1; e < 3; ++e) {
        EXPECT_EQ(p.events[e].group_leader, 0);
        EXPECT_EQ(p.events[e].attr.sample_period, 0u);
        EXPECT_EQ(p.events[e].attr.read_format, uint64_t(PERF_FORMAT_ID));
    }
    EXPECT_EQ(p.events[1].cpus, std::vector<int>{0});
    EXPECT_EQ(p.events[2].filter, "target_cpu==0");
    EXPECT_FALSE(p.user_filter);  // kernel filters only
    EXPECT_EQ(p.interval_ms, 1000u);
}

TEST(CountersPlan, HrcountRefusesThreads) {
    PlanContext c({"hrcount", "-e", "sched:sched_switch", "-p", "1"});
    EXPECT_THROW(c.plan(), Error);
}

TEST(CountersPlan, StatCountsAndSwapsPeriods) {
    PlanContext c({"stat", "-e", "sched:sched_switch", "--period", "100ms", "-i", "1000"});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_EQ(p.events[0].attr.sample_period, 0u);  // a pure counter
    EXPECT_EQ(p.pages, 1);
    EXPECT_EQ(p.tick_ms, 100u);  // the read period
    PlanContext c2({"stat", "-e", "sched:sched_switch", "--period", "2s", "-i", "500"});
    EXPECT_EQ(c2.plan().tick_ms, 500u);  // -i shorter: the reads follow -i
}

TEST(CountersPlan, HrtimerFrequencyStacksAndExpression) {
    PlanContext c({"hrtimer", "-e", "sched:sched_switch,sched:sched_wakeup", "-C", "0-1", "-F", "20", "-g",
                   "sched_switch==0 && sched_wakeup==0"});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 3u);
    EXPECT_EQ(p.events[0].attr.freq, 1u);
    EXPECT_EQ(p.events[0].attr.sample_freq, 20u);
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_EQ(p.pages, 4);
    PlanContext bad({"hrtimer", "-e", "sched:sched_switch", "--period", "10ms", "sched_wakeup==0"});
    EXPECT_THROW(bad.plan(), Error);  // no such variable
}

TEST(CountersPlan, IrqOffLeaderAlone) {
    PlanContext c({"irq-off", "--period", "10ms", "--than", "20ms", "-g"});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].attr.sample_period, 10000000u);
    EXPECT_FALSE(p.events[0].start_disabled);
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
}

TEST(CountersPlan, PercpuStatSkipsMissingTracepoints) {
    PlanContext c({"percpu-stat", "--syscalls"});
    EventPlan p = c.plan();
    // The four software counters plus the recorded tracepoints of the table.
    ASSERT_GE(p.events.size(), 5u);
    EXPECT_EQ(p.events[0].attr.config, uint64_t(PERF_COUNT_SW_CONTEXT_SWITCHES));
    for (size_t e = 1; e < p.events.size(); ++e) {
        EXPECT_EQ(p.events[e].group_leader, 0);
        EXPECT_EQ(p.events[e].attr.read_format, 0u);
    }
    EXPECT_EQ(p.events[4].sys, "raw_syscalls");
    EXPECT_EQ(p.pages, 1);
}
