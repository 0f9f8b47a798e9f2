// expr's plan (SPEC-PROFILERS §P13) from a command line, against the recorded formats: one
// tracepoint, pages 2, a wake-up per event, disabled until the session enables it, the user-space
// filter fallback; the listing printed at start-up; one event only; compile errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "perf-prof/error.h"
#include "plan_context.h"

using perfprof::Error;
using perfprof::unit::PlanContext;

namespace {

TEST(ExprPlan, OneTracepointPerEventWakeup) {
    PlanContext ctx({"expr", "-e", "sched:sched_wakeup/_cpu==0/", "pid + 1"});
    perfprof::EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].sys + ":" + p.events[0].name, "sched:sched_wakeup");
    EXPECT_EQ(p.events[0].attr.sample_period, 1u);
    EXPECT_EQ(p.events[0].attr.wakeup_events, 1u);
    EXPECT_EQ(p.events[0].attr.disabled, 1u);
    EXPECT_EQ(p.events[0].attr.pinned, 1u);
    EXPECT_EQ(p.events[0].filter, "_cpu==0");
    EXPECT_EQ(p.pages, 2);
    EXPECT_TRUE(p.per_event_wakeup);
    EXPECT_TRUE(p.user_filter);
    const std::string text = ctx.take();
    EXPECT_EQ(text.rfind("expression: pid + 1\nInstruction:\n", 0), 0u) << text;
    EXPECT_NE(text.find("Global variable:\n    int pid  @record+24\nStrings:\n"), std::string::npos) << text;
}

TEST(ExprPlan, SingleEventOnly) {
    PlanContext ctx({"expr", "-e", "sched:sched_wakeup,sched:sched_switch", "pid"});
    try {
        ctx.plan();
        ADD_FAILURE() << "planned";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "Only a single event is allowed to be specified.");
    }
}

TEST(ExprPlan, CompileErrorFailsInit) {
    PlanContext ctx({"expr", "-e", "sched:sched_wakeup", "pid + success"});
    EXPECT_THROW(ctx.plan(), Error);
    EXPECT_EQ(ctx.take(), "expression: pid + success\n");  // the diagnostics go to stdout
}

}  // namespace
