// The plans of page-faults, breakpoint, event-care and watchdog (SPEC-PROFILERS §P8, §P12,
// §P14, §P20) for typical command lines, against the recorded formats of tests/fixtures/formats.
#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "hw/hw_print.h"
#include "perf-prof/error.h"
#include "plan_context.h"

namespace perfprof::unit {
namespace {

using Args = std::vector<std::string>;

std::string plan_error(const Args& args, std::vector<int> threads = {}) {
    try {
        PlanContext ctx(args, std::move(threads));
        ctx.plan();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

// ---- page-faults ----

TEST(HwPlan, PageFaultsSoftwareEvent) {
    PlanContext ctx({"page-faults", "-C", "0", "--exclude-user"});
    const EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 1u);
    const perf_event_attr& a = p.events[0].attr;
    EXPECT_EQ(a.type, uint32_t(PERF_TYPE_SOFTWARE));
    EXPECT_EQ(a.config, uint64_t(PERF_COUNT_SW_PAGE_FAULTS));
    EXPECT_EQ(a.sample_period, 1u);
    EXPECT_EQ(a.sample_type, uint64_t(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                                      PERF_SAMPLE_CPU));
    EXPECT_TRUE(a.pinned);
    EXPECT_TRUE(a.exclude_user);
    EXPECT_FALSE(a.exclude_kernel);
    EXPECT_TRUE(p.per_event_wakeup);
}

TEST(HwPlan, PageFaultsStacksWithUserRegisters) {
    PlanContext ctx({"page-faults", "-g"});
    const perf_event_attr a = ctx.plan().events.at(0).attr;
    EXPECT_TRUE(a.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(a.sample_type & PERF_SAMPLE_REGS_USER);
    EXPECT_EQ(a.sample_regs_user, hw::kX86GeneralRegs);
    EXPECT_FALSE(a.exclude_callchain_user);
    EXPECT_FALSE(a.exclude_callchain_kernel);
}

TEST(HwPlan, PageFaultsExcludingBothIsAnError) {
    EXPECT_NE(plan_error({"page-faults", "--exclude-user", "--exclude-kernel"}).find("leave no fault"),
              std::string::npos);
}

// ---- breakpoint ----

TEST(HwPlan, BreakpointOneEventPerAddress) {
    PlanContext ctx({"breakpoint", "0x1000/4:w", "0xffffffff81000000:r", "-g"});
    const EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    const perf_event_attr& w = p.events[0].attr;
    EXPECT_EQ(w.type, uint32_t(PERF_TYPE_BREAKPOINT));
    EXPECT_EQ(w.bp_addr, 0x1000u);
    EXPECT_EQ(w.bp_len, 4u);
    EXPECT_EQ(w.bp_type, uint32_t(HW_BREAKPOINT_W));
    EXPECT_EQ(w.sample_regs_intr, hw::kX86GeneralRegs);
    EXPECT_EQ(w.sample_type & ~uint64_t(PERF_SAMPLE_CALLCHAIN),
              uint64_t(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                       PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_INTR));
    EXPECT_TRUE(w.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_EQ(p.events[1].attr.bp_type, uint32_t(HW_BREAKPOINT_RW));
    EXPECT_EQ(p.events[1].attr.bp_len, 1u);
    EXPECT_EQ(p.events[0].name, "0x1000/4:W");
    EXPECT_TRUE(p.order);  // a pure write breakpoint
}

TEST(HwPlan, BreakpointReadWriteNeedsNoOrder) {
    PlanContext ctx({"breakpoint", "0x1000/8:r"});
    const EventPlan p = ctx.plan();
    EXPECT_FALSE(p.order);
    EXPECT_FALSE(p.events.at(0).attr.sample_type & PERF_SAMPLE_CALLCHAIN);
}

TEST(HwPlan, BreakpointVerboseLine) {
    PlanContext ctx({"breakpoint", "0x1000/2", "-v"});
    ctx.plan();
    EXPECT_EQ(ctx.take(), "0x1000 len 2 type W\n");
}

TEST(HwPlan, BreakpointErrors) {
    EXPECT_NE(plan_error({"breakpoint"}).find("<addr> needs to be specified."), std::string::npos);
    EXPECT_NE(plan_error({"breakpoint", "0x1", "0x2", "0x3", "0x4", "0x5"}).find("Up to 4 breakpoints"),
              std::string::npos);
    EXPECT_NE(plan_error({"breakpoint", "0x1000", "--filter", "data > 0"}).find("/proc/kcore"),
              std::string::npos);
}

// ---- event-care ----

TEST(HwPlan, EventCareReadsTheRunningCount) {
    PlanContext ctx({"event-care", "-e", "sched:sched_wakeup", "-m", "64"});
    const EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 1u);
    const perf_event_attr& a = p.events[0].attr;
    EXPECT_EQ(a.sample_type, uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                                      PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ));
    EXPECT_EQ(a.read_format, uint64_t(PERF_FORMAT_ID));
    EXPECT_EQ(a.sample_period, 1u);
    EXPECT_TRUE(a.pinned);
    EXPECT_FALSE(p.user_filter);
}

TEST(HwPlan, EventCareStacksAreKernelOnlyAndCpusKept) {
    PlanContext ctx({"event-care", "-e", "sched:sched_wakeup//cpus=0/", "-g"});
    const EventPlan p = ctx.plan();
    const perf_event_attr& a = p.events.at(0).attr;
    EXPECT_TRUE(a.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(a.exclude_callchain_user);
    EXPECT_EQ(p.events[0].cpus, std::vector<int>{0});
}

TEST(HwPlan, EventCareErrors) {
    EXPECT_NE(plan_error({"event-care"}).find("no events given"), std::string::npos);
    EXPECT_NE(plan_error({"event-care", "-e", "page-faults"}).find("is a profiler"), std::string::npos);
}

// ---- watchdog ----

bool watchdog_inputs() {
    return ::access("/proc/sys/kernel/watchdog_thresh", R_OK) == 0 && ::geteuid() == 0;
}

TEST(HwPlan, WatchdogStagesPlannedUpFront) {
    if (!watchdog_inputs()) GTEST_SKIP() << "needs root and /proc/sys/kernel/watchdog_thresh";
    PlanContext ctx({"watchdog", "-F", "10", "-g"});
    EventPlan p;
    try {
        p = ctx.plan();
    } catch (const Error& e) {
        GTEST_SKIP() << e.what();  // no watchdog_timer_fn in kallsyms (kernel without the watchdog)
    }
    ASSERT_EQ(p.events.size(), 6u);
    EXPECT_EQ(p.events[0].sys + ":" + p.events[0].name, "timer:hrtimer_expire_entry");
    EXPECT_EQ(p.events[0].filter.rfind("function==0x", 0), 0u);
    EXPECT_FALSE(p.events[0].start_disabled);
    const char* names[] = {"hrtimer_expire_entry", "hrtimer_start", "hrtimer_cancel"};
    for (int i = 1; i <= 3; i++) {
        EXPECT_EQ(p.events[size_t(i)].name, names[i - 1]);
        EXPECT_TRUE(p.events[size_t(i)].start_disabled);
        EXPECT_EQ(p.events[size_t(i)].filter, "");  // set per CPU once stage 1 is done
        EXPECT_TRUE(p.events[size_t(i)].attr.sample_type & PERF_SAMPLE_RAW);
    }
    EXPECT_EQ(p.events[4].name, "sched_switch");
    EXPECT_EQ(p.events[4].filter, "next_comm~\"migration/*\"");
    const perf_event_attr& c = p.events[5].attr;
    EXPECT_TRUE(p.events[5].start_disabled);
    EXPECT_TRUE(c.freq);
    EXPECT_EQ(c.sample_freq, 10u);
    EXPECT_TRUE(c.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(c.exclude_callchain_user);
    EXPECT_FALSE(c.sample_type & PERF_SAMPLE_RAW);
    EXPECT_EQ(p.tick_ms, 1000u);
    EXPECT_FALSE(p.events[0].cpus.empty());
}

TEST(HwPlan, WatchdogWatchesCpusOnly) {
    EXPECT_NE(plan_error({"watchdog", "-p", "1"}, {1}).find("not usable"), std::string::npos);
}

}  // namespace
}  // namespace perfprof::unit
