#include "perf/opener.h"

#include <gtest/gtest.h>

using perfprof::EventPlan;
using perfprof::Options;
using perfprof::perf::set_wakeups;

namespace {

perf_event_attr wakeups(const EventPlan& plan, const Options& opt, int pages, perf_event_attr a = {}) {
    set_wakeups(a, plan, opt, pages);
    return a;
}

}  // namespace

TEST(OpenerWakeups, PerEventByDefault) {
    EventPlan plan;
    const perf_event_attr a = wakeups(plan, Options{}, 8);
    EXPECT_EQ(a.watermark, 0u);
    EXPECT_EQ(a.wakeup_events, 1u);
    perf_event_attr given{};
    given.wakeup_events = 16;  // the profiler's own count stays
    EXPECT_EQ(wakeups(plan, Options{}, 8, given).wakeup_events, 16u);
}

TEST(OpenerWakeups, BatchedAtHalfTheRing) {
    EventPlan plan;
    plan.per_event_wakeup = false;
    const perf_event_attr a = wakeups(plan, Options{}, 8);
    EXPECT_EQ(a.watermark, 1u);
    EXPECT_EQ(a.wakeup_watermark, 8u * 4096 / 2);
}

TEST(OpenerWakeups, WatermarkOptionWins) {
    EventPlan plan;
    Options opt;
    opt.watermark = 25;
    perf_event_attr a = wakeups(plan, opt, 8);
    EXPECT_EQ(a.watermark, 1u);
    EXPECT_EQ(a.wakeup_watermark, 8u * 4096 / 4);
    opt.watermark = 0;  // every event
    plan.per_event_wakeup = false;
    a = wakeups(plan, opt, 8);
    EXPECT_EQ(a.watermark, 0u);
    EXPECT_EQ(a.wakeup_events, 1u);
}

TEST(OpenerWakeups, OverwriteRingsWakeWhenFull) {
    EventPlan plan;
    plan.overwrite = true;
    Options opt;
    opt.watermark = 50;  // ignored: an overwrite ring is read at ticks
    const perf_event_attr a = wakeups(plan, opt, 4);
    EXPECT_EQ(a.write_backward, 1u);
    EXPECT_EQ(a.watermark, 1u);
    EXPECT_EQ(a.wakeup_watermark, 4u * 4096);
}
