// top and num-dist (SPEC-PROFILERS §P1, §P11): their plans against the recorded formats, their
// init errors, and the tables they print for synthetic samples fed through the profiler.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <string>
#include <vector>

#include "event/event_spec.h"
#include "perf-prof/error.h"
#include "plan_context.h"

namespace perfprof::unit {
namespace {

using Args = std::vector<std::string>;

constexpr uint64_t kTopSample = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                                PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;

std::string plan_error(const Args& args) {
    try {
        PlanContext ctx(args);
        ctx.plan();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

// A sys_enter_close record (6.18: __syscall_nr at 8, fd at 16, 8 bytes).
struct CloseRecord {
    uint8_t b[24] = {};
    explicit CloseRecord(uint64_t fd) { std::memcpy(b + 16, &fd, 8); }
};

// A sched_wakeup record: comm at 8, pid at 24, prio at 28.
struct WakeupRecord {
    uint8_t b[40] = {};
    WakeupRecord(const char* comm, int32_t pid, int32_t prio) {
        std::strncpy(reinterpret_cast<char*>(b + 8), comm, 15);
        std::memcpy(b + 24, &pid, 4);
        std::memcpy(b + 28, &prio, 4);
    }
};

template <class R>
void feed(PlanContext& ctx, const EventPlan& p, int index, const R& rec, uint32_t tid, uint32_t cpu = 0) {
    Sample s;
    s.event = &p.events[size_t(index)];
    s.event_index = index;
    s.instance = int(cpu);
    s.pid = s.tid = tid;
    s.cpu = cpu;
    s.raw = rec.b;
    s.raw_size = sizeof rec.b;
    ctx.profiler().sample(s);
}

// The table lines after the title line.
std::vector<std::string> table_lines(const std::string& out) {
    std::vector<std::string> lines;
    size_t at = out.find('\n');
    while (at != std::string::npos && at + 1 < out.size()) {
        const size_t end = out.find('\n', at + 1);
        lines.push_back(out.substr(at + 1, end - at - 1));
        at = end;
    }
    return lines;
}

TEST(TopPlan, EveryTopColumnInOrderOfAppearance) {
    const auto items = event::parse_event_list("a:b//top-by=x/top-add=y/top_by=\"z/2\"/top_add=w/", {});
    ASSERT_EQ(items.size(), 1u);
    const auto& top = items[0].attrs.top;
    ASSERT_EQ(top.size(), 4u);
    EXPECT_TRUE(top[0].by);
    EXPECT_EQ(top[0].expr, "x");
    EXPECT_FALSE(top[1].by);
    EXPECT_EQ(top[1].expr, "y");
    EXPECT_TRUE(top[2].by);
    EXPECT_EQ(top[2].expr, "z/2");
    EXPECT_FALSE(top[3].by);
    EXPECT_EQ(top[3].expr, "w");
}

TEST(TopPlan, EventsWithoutStacksAndTheTemplate) {
    PlanContext ctx(
        {"top", "-e", "sched:sched_wakeup//stack/key=pid/,sched:sched_switch//key=prev_pid/", "-i", "500"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    for (const EventSpec& e : p.events) {
        EXPECT_EQ(e.attr.sample_type, kTopSample);  // stack is ignored (§P1)
        EXPECT_EQ(e.attr.sample_period, 1u);
        EXPECT_EQ(e.attr.read_format, uint64_t(PERF_FORMAT_ID));
        EXPECT_TRUE(e.attr.pinned);
    }
    EXPECT_FALSE(p.per_event_wakeup);
    EXPECT_TRUE(p.user_filter);
    EXPECT_EQ(p.interval_ms, 1000u);  // the default -i; the session prefers a given -i
}

TEST(TopPlan, InitErrors) {
    EXPECT_NE(plan_error({"top"}).find("monitor(top) init failed"), std::string::npos);
    EXPECT_EQ(plan_error({"top", "-e", "sched:sched_wakeup//key=pid/,sched:sched_switch"}),
              "When using key, all events must have a 'key' attr.");
    EXPECT_EQ(plan_error({"top", "-e", "sched:sched_wakeup", "-k", "no_such_field"}),
              "sched:sched_wakeup: Cannot set key 'no_such_field'");
    EXPECT_EQ(plan_error({"top", "-e", "sched:sched_wakeup//key=pid/", "--only-comm"}),
              "--only-comm requires all events to have a 'comm' attr");
    EXPECT_EQ(
        plan_error({"top", "-e", "sched:sched_wakeup//key=pid/comm=comm/,sched:sched_switch//key=prev_pid/",
                    "--only-comm"}),
        "--only-comm requires all events to have a 'comm' attr");
}

TEST(TopPlan, KeyedCountsPerFieldValue) {
    PlanContext ctx({"top", "-e", "syscalls:sys_enter_close//key=fd/"});
    EventPlan p = ctx.plan();
    for (uint64_t i = 0; i < 30; i++) feed(ctx, p, 0, CloseRecord(1000 + i % 3), 77);
    feed(ctx, p, 0, CloseRecord(5), 0xffffffff);  // no task: dropped
    ctx.profiler().finish();
    const std::string out = ctx.take();
    EXPECT_NE(out.find("perf-prof - "), std::string::npos);
    EXPECT_NE(out.find("  sample 30 events\n"), std::string::npos) << out;
    EXPECT_EQ(table_lines(out),
              (std::vector<std::string>{"      FD SYS_ENTER_CLOSE ", "    1000              10 ",
                                        "    1001              10 ", "    1002              10 "}));
    // Rows are cleared after printing: nothing more at the next tick.
    ctx.profiler().interval();
    EXPECT_EQ(ctx.take(), "");
}

TEST(TopPlan, TopByColumnsAliasAndNames) {
    PlanContext ctx(
        {"top", "-e", "sched:sched_wakeup//key=pid/comm=comm/top-add=prio/top-by=\"prio/10\"/alias=pr/"});
    EventPlan p = ctx.plan();
    feed(ctx, p, 0, WakeupRecord("low", 10, 120), 1);
    feed(ctx, p, 0, WakeupRecord("low", 10, 120), 1);
    feed(ctx, p, 0, WakeupRecord("renamed", 10, 120), 1);  // the first name stays
    feed(ctx, p, 0, WakeupRecord("rt", 20, 99), 1);
    ctx.profiler().finish();
    EXPECT_EQ(table_lines(ctx.take()), (std::vector<std::string>{"     PID           PR      PRIO/10 COMM",
                                                                 "      10          360           36 low",
                                                                 "      20           99            9 rt"}));
}

TEST(TopPlan, NoKeysNamesComeFromTheTaskOrComm) {
    PlanContext ctx({"top", "-e", "sched:sched_wakeup"});
    EventPlan p = ctx.plan();
    feed(ctx, p, 0, WakeupRecord("x", 1, 1), 5);
    feed(ctx, p, 0, WakeupRecord("x", 1, 1), 5);
    ctx.profiler().finish();
    // PlanContext names every task "comm".
    EXPECT_EQ(table_lines(ctx.take()),
              (std::vector<std::string>{"     PID SCHED_WAKEUP COMM", "       5            2 comm"}));
}

TEST(TopPlan, OnlyCommRowsByName) {
    PlanContext ctx({"top", "-e", "sched:sched_wakeup//comm=comm/", "--only-comm"});
    EventPlan p = ctx.plan();
    feed(ctx, p, 0, WakeupRecord("aa", 1, 1), 5);
    feed(ctx, p, 0, WakeupRecord("bb", 2, 1), 6);
    feed(ctx, p, 0, WakeupRecord("aa", 3, 1), 7);
    ctx.profiler().finish();
    EXPECT_EQ(table_lines(ctx.take()),
              (std::vector<std::string>{"SCHED_WAKEUP COMM", "           2 aa", "           1 bb"}));
}

TEST(TopPlan, KeysWithoutCommHaveNoNameColumnAndPrintkeyPrints) {
    PlanContext ctx({"top", "-e", "sched:sched_wakeup//key=pid/printkey=printf(\"0x%x\",key)/"});
    EventPlan p = ctx.plan();
    feed(ctx, p, 0, WakeupRecord("x", 255, 1), 5);
    ctx.profiler().finish();
    EXPECT_EQ(table_lines(ctx.take()),
              (std::vector<std::string>{
                  "     PID SCHED_WAKEUP ",
                  "0xff                1 "}));  // 4 + 5 spaces (8 - 4 + 1), then a 12 wide cell
}

TEST(TopPlan, KeyMinusOneIsZero) {
    PlanContext ctx({"top", "-e", "sched:sched_wakeup", "-k", "pid"});
    EventPlan p = ctx.plan();
    feed(ctx, p, 0, WakeupRecord("x", -1, 1), 5);
    ctx.profiler().finish();
    EXPECT_EQ(table_lines(ctx.take()),
              (std::vector<std::string>{"     PID SCHED_WAKEUP ", "       0            1 "}));
}

TEST(NumDistPlan, EventsAndWakeups) {
    PlanContext ctx({"num-dist", "-e", "syscalls:sys_enter_lseek//num=offset/"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].attr.sample_type, kTopSample);
    EXPECT_EQ(p.pages, 64);
    EXPECT_EQ(p.interval_ms, 0u);  // no default -i
    EXPECT_TRUE(p.events[0].attr.watermark);
    EXPECT_EQ(p.events[0].attr.wakeup_watermark, 64u * 4096 / 3);
    EXPECT_TRUE(p.user_filter);

    PlanContext g(
        {"num-dist", "-e", "syscalls:sys_enter_lseek//num=offset/,syscalls:sys_enter_close//num=fd/stack/"});
    EventPlan pg = g.plan();
    EXPECT_FALSE(pg.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(pg.events[1].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_EQ(pg.pages, 128);
}

TEST(NumDistPlan, InitErrors) {
    EXPECT_NE(plan_error({"num-dist"}).find("monitor(num-dist) init failed"), std::string::npos);
    EXPECT_EQ(plan_error({"num-dist", "-e", "syscalls:sys_enter_close"}),
              "Please use the multi-trace profiler");
    EXPECT_EQ(plan_error({"num-dist", "-e", "syscalls:sys_enter_close//num=fd/,syscalls:sys_enter_lseek"}),
              "The number of 'num' attr is not equal to the number of event");
}

TEST(NumDistPlan, ThanIsATime) {
    PlanContext ctx({"num-dist", "-e", "syscalls:sys_enter_close//num=fd/alias=cl/", "--than", "1us"});
    EventPlan p = ctx.plan();
    feed(ctx, p, 0, CloseRecord(999), 1);
    EXPECT_EQ(ctx.take(), "");  // 999 <= 1000
    feed(ctx, p, 0, CloseRecord(1001), 1);
    EXPECT_NE(ctx.take().find("syscalls:sys_enter_close"), std::string::npos);
    ctx.profiler().finish();
    const std::vector<std::string> lines = table_lines(ctx.take());
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[2],
              "   cl        2             2000          999         1000         1000         1001");
}

}  // namespace
}  // namespace perfprof::unit
