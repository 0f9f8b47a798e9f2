// Each tracepoint profiler's plan() for typical command lines, against the formats recorded from
// Linux 6.18 in tests/fixtures/formats (tep::Tep reading a directory, not tracefs): the planned
// events, their sample_type bits and kernel filters, and the plan's flags.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "event/resolve.h"
#include "perf-prof/error.h"
#include "plan_context.h"
#include "tep/tep.h"

namespace perfprof::unit {
namespace {

using Args = std::vector<std::string>;

// The id the recorded format of sys/name gives (its `id` file, as tracefs's).
uint64_t recorded_id(const std::string& sys_name) {
    const std::string path = recorded_formats_dir() + "/" + sys_name + "/id";
    FILE* f = std::fopen(path.c_str(), "re");
    if (!f) return 0;
    unsigned long long id = 0;
    if (std::fscanf(f, "%llu", &id) != 1) id = 0;
    std::fclose(f);
    return id;
}

std::vector<std::string> names(const EventPlan& p) {
    std::vector<std::string> out;
    for (const EventSpec& e : p.events) out.push_back(e.sys + ":" + e.name);
    return out;
}

// The message of the Error plan() throws for `args`; fails the test when it throws none.
std::string plan_error(const Args& args, std::vector<int> threads = {}, bool usage = true) {
    try {
        PlanContext ctx(args, std::move(threads));
        ctx.plan();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind() == Error::Kind::Usage, usage) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}

constexpr uint64_t kTraceSample = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;

// ---- the Tep over a directory ----

TEST(TepFromDir, ReadsRecordedFormatsOnly) {
    tep::Tep tep(recorded_formats_dir());
    EXPECT_TRUE(tep.has_event("sched", "sched_switch"));
    EXPECT_FALSE(tep.has_event("sched", "sched_kthread_stop"));  // in tracefs, not recorded
    EXPECT_FALSE(tep.has_event("sched", ".."));
    EXPECT_FALSE(tep.has_event("..", "sched"));
    tep_event* sw = tep.event("sched", "sched_switch");
    ASSERT_NE(sw, nullptr);
    EXPECT_EQ(uint64_t(sw->id), recorded_id("sched/sched_switch"));
    EXPECT_NE(tep_find_field(sw, "prev_state"), nullptr);
    EXPECT_NE(tep.format_text("sched", "sched_switch").find("print fmt:"), std::string::npos);
    const std::vector<std::string> all = tep.event_names();
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
    EXPECT_NE(std::find(all.begin(), all.end(), "irq:softirq_entry"), all.end());
    EXPECT_THROW(tep.event("sched", "sched_kthread_stop"), Error);
}

// ---- signal ----

TEST(Plan, SignalGenerateWithItsFilterAndStacks) {
    PlanContext ctx({"signal"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"signal:signal_generate"}));
    const EventSpec& e = p.events[0];
    EXPECT_EQ(e.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
    EXPECT_EQ(e.attr.config, recorded_id("signal/signal_generate"));
    EXPECT_EQ(e.attr.sample_type,
              uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW));
    EXPECT_EQ(e.filter, "");
    EXPECT_TRUE(p.per_event_wakeup);
    EXPECT_FALSE(p.order);
    EXPECT_EQ(p.pages, 8);

    PlanContext g({"signal", "-g", "--filter", "bash,ssh*"});
    EventPlan pg = g.plan();
    ASSERT_EQ(pg.events.size(), 1u);
    EXPECT_TRUE(pg.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_EQ(pg.events[0].filter, "comm==\"bash\"||comm~\"ssh*\"");
    EXPECT_EQ(pg.pages, 16);
}

// ---- trace ----

TEST(Plan, TraceEventsFiltersAndFlags) {
    PlanContext ctx({"trace", "-e", "sched:sched_wakeup,signal:signal_generate/sig==9/", "--order"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"sched:sched_wakeup", "signal:signal_generate"}));
    EXPECT_EQ(p.events[0].attr.config, recorded_id("sched/sched_wakeup"));
    EXPECT_EQ(p.events[0].attr.sample_type, kTraceSample);
    EXPECT_EQ(p.events[0].filter, "");
    EXPECT_EQ(p.events[1].filter, "sig==9");
    EXPECT_TRUE(p.order);
    EXPECT_TRUE(p.user_filter);
    EXPECT_FALSE(p.per_event_wakeup);
    for (const EventSpec& e : p.events) {
        EXPECT_TRUE(e.attr.watermark);
        EXPECT_EQ(e.attr.wakeup_watermark, uint32_t(p.pages) * 4096 / 4);
        EXPECT_FALSE(e.fields.empty());
    }
}

TEST(Plan, TraceStacksOnlyWhereAsked) {
    PlanContext ctx({"trace", "-e", "sched:sched_wakeup//stack/,sched:sched_switch"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_FALSE(p.events[1].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
}

TEST(Plan, TraceGlobsExpandOverTheRecordedEvents) {
    PlanContext ctx({"trace", "-e", "sched:sched_wakeup*"});
    EXPECT_EQ(names(ctx.plan()), (std::vector<std::string>{"sched:sched_wakeup", "sched:sched_wakeup_new"}));
}

TEST(Plan, TraceNestedProfilerIsNoEvent) {
    PlanContext ctx({"trace", "-e", "sched:sched_wakeup,task-state/-S/", "--order"});
    EventPlan p = ctx.plan();
    EXPECT_EQ(names(p), (std::vector<std::string>{"sched:sched_wakeup"}));
    ASSERT_EQ(p.nested.size(), 1u);
    EXPECT_EQ(p.nested[0].profiler, "task-state");
    EXPECT_EQ(p.nested[0].options, "-S");
}

TEST(Plan, TraceUnknownEventIsLookedUpInTheRecordedFormats) {
    // sched_kthread_stop exists in tracefs but was not recorded: the Tep's directory decides.
    const std::string msg = plan_error({"trace", "-e", "sched:sched_kthread_stop"}, {}, false);
    EXPECT_NE(msg.find("sched:sched_kthread_stop not found"), std::string::npos) << msg;
    const std::string typo = plan_error({"trace", "-e", "sched:sched_wakeup_nw"}, {}, false);
    EXPECT_NE(typo.find("did you mean sched:sched_wakeup_new"), std::string::npos) << typo;
}

// ---- task-state ----

TEST(Plan, TaskStateEveryoneEverything) {
    PlanContext ctx({"task-state"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"sched:sched_switch", "sched:sched_wakeup",
                                                  "sched:sched_wakeup_new"}));
    for (const EventSpec& e : p.events) {
        EXPECT_EQ(e.attr.sample_type, uint64_t(PERF_SAMPLE_TIME | PERF_SAMPLE_RAW));
        EXPECT_EQ(e.filter, "");
        EXPECT_TRUE(e.attr.pinned);
    }
    EXPECT_TRUE(p.order);
    EXPECT_TRUE(p.system_wide);
    EXPECT_FALSE(p.follow);
    EXPECT_FALSE(p.per_event_wakeup);
    EXPECT_EQ(p.pages, 128);
}

TEST(Plan, TaskStateSleepsOfEveryone) {
    PlanContext ctx({"task-state", "-S", "-D"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"sched:sched_switch", "sched:sched_wakeup"}));
    EXPECT_EQ(p.events[0].filter, "prev_state==1||prev_state==2||prev_state==130");
    EXPECT_EQ(p.events[1].filter, "");
}

TEST(Plan, TaskStateAttachedTasksByFilter) {
    PlanContext ctx({"task-state", "-p", "100", "-g"}, {100, 101, 102, 200});
    EventPlan p = ctx.plan();
    // Both sides of a switch apart, and the wake-ups: each selecting the attached threads.
    ASSERT_EQ(names(p), (std::vector<std::string>{"sched:sched_switch", "sched:sched_switch",
                                                  "sched:sched_wakeup", "sched:sched_wakeup_new"}));
    EXPECT_EQ(p.events[0].filter, "(prev_pid>=100&&prev_pid<=102)||prev_pid==200");
    EXPECT_EQ(p.events[1].filter, "(next_pid>=100&&next_pid<=102)||next_pid==200");
    EXPECT_EQ(p.events[2].filter, "(pid>=100&&pid<=102)||pid==200");
    for (const EventSpec& e : p.events)
        EXPECT_EQ(e.attr.sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN),
                  uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN));
    EXPECT_TRUE(p.system_wide);
    EXPECT_TRUE(p.follow);  // -p inherits: new threads are followed
    EXPECT_EQ(p.pages, 256);
    // Tasks followed later get the same events with filters of their own.
    const std::vector<std::string> later = ctx.profiler().filters_for({300});
    EXPECT_EQ(later, (std::vector<std::string>{"prev_pid==300", "next_pid==300", "pid==300", "pid==300"}));
}

TEST(Plan, TaskStateSleepsOfNamedTasks) {
    PlanContext ctx({"task-state", "-D", "--filter", "postgres*"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p),
              (std::vector<std::string>{"sched:sched_switch", "sched:sched_switch", "sched:sched_wakeup"}));
    EXPECT_EQ(p.events[0].filter, "(prev_state==2||prev_state==130)&&(prev_comm~\"postgres*\")");
    EXPECT_EQ(p.events[1].filter, "next_comm~\"postgres*\"");
    EXPECT_EQ(p.events[2].filter, "comm~\"postgres*\"");
    EXPECT_FALSE(p.follow);  // names select the tasks
    EXPECT_TRUE(ctx.profiler().filters_for({300}).empty());
}

// ---- multi-trace ----

TEST(Plan, MultiTraceTwoPositions) {
    PlanContext ctx({"multi-trace", "-e", "irq:softirq_entry/vec==1/", "-e", "irq:softirq_exit/vec==1/"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"irq:softirq_entry", "irq:softirq_exit"}));
    for (const EventSpec& e : p.events) {
        EXPECT_EQ(e.filter, "vec==1");
        EXPECT_EQ(e.attr.sample_type, kTraceSample);
    }
    EXPECT_FALSE(p.order);
    EXPECT_TRUE(p.user_filter);
    EXPECT_FALSE(p.per_event_wakeup);
    EXPECT_EQ(p.pages, 256);
}

TEST(Plan, MultiTraceKeysStacksAndAlternatives) {
    PlanContext ctx({"multi-trace", "-e", "sched:sched_wakeup,sched:sched_wakeup_new", "-e",
                     "sched:sched_switch//key=next_pid/stack/", "-k", "pid", "--order", "--than", "4ms"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"sched:sched_wakeup", "sched:sched_wakeup_new",
                                                  "sched:sched_switch"}));
    EXPECT_FALSE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(p.events[2].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(p.order);
    EXPECT_EQ(p.pages, 512);
}

TEST(Plan, MultiTraceSyscallsAndNested) {
    PlanContext sc(
        {"multi-trace", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "--impl", "syscalls"});
    EXPECT_EQ(names(sc.plan()),
              (std::vector<std::string>{"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"}));

    PlanContext nested({"multi-trace", "-e", "irq:softirq_entry", "-e", "irq:softirq_exit,task-state/-S/",
                        "--order", "--than", "1ms", "--detail"});
    EventPlan p = nested.plan();
    EXPECT_EQ(names(p), (std::vector<std::string>{"irq:softirq_entry", "irq:softirq_exit"}));
    ASSERT_EQ(p.nested.size(), 1u);
    EXPECT_EQ(p.nested[0].profiler, "task-state");
}

TEST(Plan, MultiTraceRefusals) {
    EXPECT_NE(plan_error({"multi-trace", "-e", "irq:softirq_entry"}).find("at least 2 -e lists"),
              std::string::npos);
    EXPECT_NE(plan_error({"multi-trace", "-e", "irq:softirq_entry", "-e", "irq:softirq_exit", "-k", "vec"})
                  .find("also need to enable --order"),
              std::string::npos);
    EXPECT_NE(plan_error({"multi-trace", "-e", "irq:softirq_entry//untraced/", "-e", "irq:softirq_exit"})
                  .find("are marked as untraced"),
              std::string::npos);
    EXPECT_NE(
        plan_error({"multi-trace", "-e", "irq:softirq_entry", "-e", "irq:softirq_exit", "--impl", "call"})
            .find("Only nested-trace"),
        std::string::npos);
}

// SPEC §1.10: the `help` word's command template of each implementation that suits the lists.
TEST(Plan, MultiTraceHelpTemplate) {
    PlanContext ctx(
        {"multi-trace", "-e", "sched:sched_wakeup", "-e", "sched:sched_switch", "--impl", "pair", "help"});
    ASSERT_NE(ctx.info().help_template, nullptr);
    const std::vector<event::Resolved> events =
        event::resolve_event_list("sched:sched_wakeup,sched:sched_switch", ctx.tep(), 0, {});
    EXPECT_EQ(
        ctx.info().help_template(ctx.options(), events),
        "perf-prof multi-trace -e \"sched:sched_wakeup/./key=./[role=./][untraced/][trigger/][alias=./]\" "
        "-e \"sched:sched_switch/./key=./[role=./][untraced/][trigger/][alias=./]\" --order --impl pair "
        "[-k .] [--perins] [--than .] [--detail] [-C .] [-p .] [-i .] \n");
}

// ---- kmemleak ----

TEST(Plan, KmemleakAllocStacksAndNoPeriod) {
    PlanContext ctx({"kmemleak", "--alloc", "kmem:kmalloc,kmem:kmem_cache_alloc", "--free",
                     "kmem:kfree,kmem:kmem_cache_free", "-g"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"kmem:kmalloc", "kmem:kmem_cache_alloc", "kmem:kfree",
                                                  "kmem:kmem_cache_free"}));
    for (size_t i = 0; i < p.events.size(); i++) {
        const uint64_t st = p.events[i].attr.sample_type;
        EXPECT_FALSE(st & PERF_SAMPLE_PERIOD);
        EXPECT_TRUE(st & PERF_SAMPLE_RAW);
        EXPECT_EQ(bool(st & PERF_SAMPLE_CALLCHAIN), i < 2) << i;  // free stacks only on request
        // Kernel stacks only: no task attached.
        EXPECT_EQ(p.events[i].attr.exclude_callchain_user, i < 2) << i;
    }
    EXPECT_TRUE(p.order);
    EXPECT_TRUE(p.user_filter);
    EXPECT_EQ(p.pages, 128);
}

TEST(Plan, KmemleakUserStacksWhenAttached) {
    PlanContext ctx({"kmemleak", "--alloc", "kmem:kmalloc", "--free", "kmem:kfree", "-g", "-p", "100"},
                    {100});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_FALSE(p.events[0].attr.exclude_callchain_user);
    EXPECT_FALSE(p.events[1].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
}

TEST(Plan, KmemleakPointerExpressions) {
    PlanContext ctx({"kmemleak", "--alloc", "kmem:mm_page_alloc//ptr=pfn/size=4096<<order/", "--free",
                     "kmem:mm_page_free//ptr=pfn/", "-C", "0"});
    EventPlan p = ctx.plan();
    EXPECT_EQ(names(p), (std::vector<std::string>{"kmem:mm_page_alloc", "kmem:mm_page_free"}));
    EXPECT_EQ(p.pages, 64);
    const std::string msg = plan_error({"kmemleak", "--alloc", "irq:softirq_entry", "--free", "kmem:kfree"});
    EXPECT_NE(msg.find("ptr attribute is not set"), std::string::npos) << msg;
}

// ---- profile (no tracepoint: the plan needs no format; --off-cpu: sched_switch's) ----

TEST(Plan, ProfileOffCpuAddsSwitchOutSamplesAndSwitchRecords) {
    PlanContext ctx({"profile", "-F", "99", "-g", "--off-cpu", "--off-cpu-min", "1ms"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    const EventSpec& sw = p.events[1];
    EXPECT_EQ(sw.sys + ":" + sw.name, "sched:sched_switch");
    EXPECT_EQ(sw.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
    EXPECT_EQ(sw.attr.sample_period, 1u);
    EXPECT_EQ(sw.attr.context_switch, 1u);
    EXPECT_EQ(sw.filter, "prev_pid != 0");
    EXPECT_TRUE(sw.attr.sample_type & PERF_SAMPLE_RAW);
    EXPECT_TRUE(sw.attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    // The sample_id trailer is laid out by the first event's sample_type: the same bits here.
    constexpr uint64_t kTrailer = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_ID;
    EXPECT_EQ(sw.attr.sample_type & kTrailer, p.events[0].attr.sample_type & kTrailer);
    EXPECT_TRUE(p.order);
    EXPECT_EQ(p.pages, 128);
    // No stacks, no off-CPU time: refused.
    EXPECT_NE(plan_error({"profile", "-F", "99", "--off-cpu"}).find("--off-cpu needs -g"), std::string::npos);
}

TEST(Plan, ProfileOneSampledCounter) {
    PlanContext ctx({"profile", "-F", "99"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 1u);
    const EventSpec& e = p.events[0];
    EXPECT_EQ(e.kind, EventKind::Other);
    // The address: the table of functions names the one each sample was taken in.
    EXPECT_EQ(e.attr.sample_type, uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                           PERF_SAMPLE_PERIOD | PERF_SAMPLE_IP));
    // Upstream's lines, and no table: no address either.
    for (const char* no_table : {"--print-samples", "--top=0"})
        EXPECT_EQ(PlanContext({"profile", "-F", "99", no_table}).plan().events.at(0).attr.sample_type,
                  uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD))
            << no_table;
    EXPECT_TRUE(e.attr.type == PERF_TYPE_HARDWARE || e.attr.type == PERF_TYPE_SOFTWARE) << e.attr.type;
    EXPECT_TRUE(e.name == "ref-cycles" || e.name == "cpu-cycles" || e.name == "cpu-clock") << e.name;

    PlanContext g({"profile", "-F", "99", "-g", "--exclude-user"});
    EventPlan pg = g.plan();
    ASSERT_EQ(pg.events.size(), 1u);
    EXPECT_TRUE(pg.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_TRUE(pg.events[0].attr.exclude_user);
    EXPECT_NE(plan_error({"profile", "-F", "99", "--exclude-user", "--exclude-kernel"}).find("leave nothing"),
              std::string::npos);
}

// ---- lock ----

TEST(Plan, LockFutexEnterAndExitInOrder) {
    PlanContext ctx({"lock"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(names(p), (std::vector<std::string>{"syscalls:sys_enter_futex", "syscalls:sys_exit_futex"}));
    EXPECT_EQ(p.events[0].attr.config, recorded_id("syscalls/sys_enter_futex"));
    EXPECT_EQ(p.events[1].attr.config, recorded_id("syscalls/sys_exit_futex"));
    for (const EventSpec& e : p.events)
        EXPECT_EQ(e.attr.sample_type, uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW));
    EXPECT_EQ(p.events[0].filter, "");
    EXPECT_EQ(p.events[1].filter, "ret <= 0");  // the exits of releases that woke someone dropped
    EXPECT_TRUE(p.order);
    EXPECT_FALSE(p.per_event_wakeup);
}

TEST(Plan, LockStacksOnTheEnterOnly) {
    PlanContext ctx({"lock", "-g", "-p", "100"}, {100});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_FALSE(p.events[1].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
}

TEST(Plan, LockRefusals) {
    EXPECT_NE(plan_error({"lock", "--than", "0"}).find("than"), std::string::npos);
    EXPECT_NE(plan_error({"lock", "--than", "x"}).find("invalid time"), std::string::npos);
}

TEST(Plan, LockPprofImpliesStacks) {
    const std::string path = testing::TempDir() + "lock_plan.pb.gz";
    PlanContext ctx({"lock", "--pprof", path});
    EventPlan p = ctx.plan();
    EXPECT_TRUE(p.events[0].attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace perfprof::unit
