// The plans of oncpu and sched-migrate against the recorded formats (SPEC §P3, §P19).
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include "perf-prof/error.h"
#include "plan_context.h"

namespace perfprof::unit {
namespace {

TEST(SchedPlan, OncpuCpuModeAndPrioFilter) {
    PlanContext c({"oncpu", "--prio", "1-99,120"});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].name, "sched_switch");
    EXPECT_EQ(p.events[0].attr.sample_type, uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW));
    EXPECT_EQ(
        p.events[0].filter,
        "((prev_prio>=1&&prev_prio<=99)||prev_prio==120) || ((next_prio>=1&&next_prio<=99)||next_prio==120)");
    EXPECT_EQ(p.interval_ms, 1000u);
    EXPECT_EQ(p.pages, 4);
    PlanContext x({"oncpu", "--prio", "1", "--filter", "prev_pid==1"});
    EXPECT_THROW(x.plan(), Error);
}

TEST(SchedPlan, OncpuThreadModeUsesStatRuntime) {
    PlanContext c({"oncpu", "--filter", "runtime>1000", "-t", "5"}, {5});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].name, "sched_stat_runtime");
    EXPECT_EQ(p.events[0].filter, "runtime>1000");
}

TEST(SchedPlan, SchedMigrate) {
    PlanContext c({"sched-migrate", "--filter", "pid==3", "-g"});
    EventPlan p = c.plan();
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].name, "sched_migrate_task");
    EXPECT_EQ(p.events[0].filter, "pid==3");
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_EQ(p.pages, 4);
}

}  // namespace
}  // namespace perfprof::unit
