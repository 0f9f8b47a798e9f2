// Plans of multi-trace's derivatives (SPEC-PROFILERS §P4, §P5): rundelay's automatic keys and
// kernel filters and its system-wide rewrite, syscalls' ordering and extra event.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perf-prof/error.h"
#include "plan_context.h"

namespace perfprof {
namespace {

using unit::PlanContext;

std::vector<std::string> names(const EventPlan& p) {
    std::vector<std::string> out;
    for (const EventSpec& e : p.events) out.push_back(e.sys + ":" + e.name);
    return out;
}

const std::vector<std::string> kRundelay = {"rundelay", "-e", "sched:sched_wakeup*,sched:sched_switch", "-e",
                                            "sched:sched_switch"};

TEST(MtPlan, RundelayAttachedTasksAreFiltersOnEveryCpu) {
    PlanContext ctx(kRundelay, {3, 4, 5, 9});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"sched:sched_wakeup", "sched:sched_wakeup_new", "sched:sched_switch",
                                                  "sched:sched_switch"}));
    EXPECT_EQ(p.events[0].filter, "(pid>=3&&pid<=5)||pid==9");
    EXPECT_EQ(p.events[1].filter, "(pid>=3&&pid<=5)||pid==9");
    EXPECT_EQ(p.events[2].filter, "(prev_state==0||prev_state==256) && ((prev_pid>=3&&prev_pid<=5)||prev_pid==9)");
    EXPECT_EQ(p.events[3].filter, "(next_pid>=3&&next_pid<=5)||next_pid==9");
    EXPECT_TRUE(p.system_wide);
    EXPECT_TRUE(p.order);
}

TEST(MtPlan, RundelayNamesWinAndEveryoneWithoutThem) {
    std::vector<std::string> a = kRundelay;
    a.insert(a.end(), {"--filter", "python,ssh*"});
    PlanContext named(a, {3});
    EventPlan p = named.plan();
    EXPECT_EQ(p.events[0].filter, "comm==\"python\"||comm~\"ssh*\"");
    EXPECT_EQ(p.events[3].filter, "next_comm==\"python\"||next_comm~\"ssh*\"");
    PlanContext all(kRundelay);
    EventPlan q = all.plan();
    EXPECT_EQ(q.events[0].filter, "");
    EXPECT_EQ(q.events[2].filter, "(prev_state==0||prev_state==256)&&prev_pid>0");
    EXPECT_EQ(q.events[3].filter, "");
}

TEST(MtPlan, RundelayNeedsItsFourEvents) {
    PlanContext ctx({"rundelay", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch"});
    try {
        ctx.plan();
        FAIL() << "planned";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "rundelay filter failed, found 2 matching events.");
    }
}

TEST(MtPlan, SyscallsKeysAndOrderOnCpusOnly) {
    const std::vector<std::string> a = {"syscalls", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit"};
    PlanContext cpus(a);
    EventPlan p = cpus.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
                                                  "sched:sched_process_free"}));
    EXPECT_TRUE(p.order);
    PlanContext threads(a, {42});
    EXPECT_FALSE(threads.plan().order);
}

}  // namespace
}  // namespace perfprof
