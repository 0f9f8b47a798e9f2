// task-state's pieces around the state machine: the modes and kernel filters of the planned
// events (sched/roles), synthetic sched_switch / sched_wakeup records fed by role, and the
// table with its notes (sched/state_table).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perf-prof/profiler.h"
#include "sched/roles.h"
#include "sched/state_table.h"
#include "sched/task_states.h"

namespace perfprof::sched {
namespace {

using Roles = std::vector<Role>;

std::string by_pid(const std::string& side) {
    return side + "pid==7";
}

TEST(SchedRoles, ModesPlanTheirEvents) {
    EXPECT_EQ((Selection{}.roles()), (Roles{Role::Switch, Role::Wakeup, Role::WakeupNew}));
    EXPECT_EQ((Selection{{}, false, true}.roles()),
              (Roles{Role::SwitchPrev, Role::SwitchNext, Role::Wakeup, Role::WakeupNew}));
    EXPECT_EQ((Selection{true, false, false}.roles()), (Roles{Role::SwitchPrev, Role::Wakeup}));
    EXPECT_EQ((Selection{true, true, true}.roles()),
              (Roles{Role::SwitchPrev, Role::SwitchNext, Role::Wakeup}));
    // --no-interruptible is no -S: everything is still planned.
    EXPECT_EQ((Selection{false, false, false}.roles()), (Roles{Role::Switch, Role::Wakeup, Role::WakeupNew}));
    EXPECT_STREQ(event_name(Role::SwitchNext), "sched_switch");
    EXPECT_STREQ(event_name(Role::WakeupNew), "sched_wakeup_new");
}

TEST(SchedRoles, SwitchInsWatchedUnlessSleepsOfEveryone) {
    EXPECT_TRUE(Selection{}.watches_switch_ins());
    EXPECT_TRUE((Selection{true, false, true}.watches_switch_ins()));
    EXPECT_FALSE((Selection{true, false, false}.watches_switch_ins()));
}

TEST(SchedRoles, ReportableRows) {
    const unsigned all = 1u << kS | 1u << kD | 1u << kT | 1u << kt | 1u << kI;
    EXPECT_EQ(Selection{}.reportable(), all);
    EXPECT_EQ((Selection{false, false, false}.reportable()), all & ~(1u << kS));
    EXPECT_EQ((Selection{true, false, false}.reportable()), 1u << kS);
    EXPECT_EQ((Selection{{}, true, false}.reportable()), 1u << kD);
    EXPECT_EQ((Selection{true, true, false}.reportable()), 1u << kS | 1u << kD);
}

TEST(SchedRoles, Filters) {
    const Selection everyone{}, tasks{{}, false, true}, sd{true, true, false}, sd_tasks{{}, true, true};
    EXPECT_EQ(everyone.state_filter(), "");
    EXPECT_EQ(sd.state_filter(), "prev_state==1||prev_state==2||prev_state==130");
    EXPECT_EQ(sd_tasks.state_filter(), "prev_state==2||prev_state==130");
    EXPECT_EQ(role_filter(Role::Switch, everyone, "", by_pid), "");
    EXPECT_EQ(role_filter(Role::Wakeup, everyone, "", by_pid), "");
    EXPECT_EQ(role_filter(Role::SwitchPrev, tasks, "", by_pid), "prev_pid==7");
    EXPECT_EQ(role_filter(Role::SwitchNext, tasks, "", by_pid), "next_pid==7");
    EXPECT_EQ(role_filter(Role::WakeupNew, tasks, "", by_pid), "pid==7");
    EXPECT_EQ(role_filter(Role::SwitchPrev, sd, sd.state_filter(), by_pid), sd.state_filter());
    EXPECT_EQ(role_filter(Role::SwitchPrev, sd_tasks, sd_tasks.state_filter(), by_pid),
              "(prev_state==2||prev_state==130)&&(prev_pid==7)");
}

// Records as the fields below lay them out.
struct SwitchRecord {
    int32_t prev_pid, next_pid;
    int64_t prev_state;
};
struct WakeupRecord {
    int32_t pid;
};

const SchedFields kFields{{0, 4, true, true}, {8, 8, true, true}, {4, 4, true, true}, {0, 4, true, true}};

class Intervals final : public Sink {
public:
    void closed(uint32_t tid, int row, uint64_t ns, const perf::SampleCopy*, const Sample&) override {
        got.push_back(std::to_string(tid) + kRowName[row] + std::to_string(ns));
    }
    std::vector<std::string> got;
};

struct Feeder {
    explicit Feeder(Selection sel) : states({sel.sleeps_only(), sel.reportable(), false}, sink) {}

    void sw(Role role, uint64_t t, int32_t prev, int32_t next, int64_t state) {
        SwitchRecord r{prev, next, state};
        send(role, t, &r, sizeof r);
    }
    void wake(uint64_t t, int32_t pid) {
        WakeupRecord r{pid};
        send(Role::Wakeup, t, &r, sizeof r);
    }
    void send(Role role, uint64_t t, const void* raw, uint32_t size) {
        Sample s;
        s.time = t;
        s.event = &event;
        s.raw = raw;
        s.raw_size = size;
        feed(states, role, kFields, s);
    }

    EventSpec event;
    Intervals sink;
    TaskStates states;
};

TEST(SchedRoles, OneSwitchRecordEndsOneTaskAndStartsAnother) {
    Feeder f(Selection{});
    f.sw(Role::Switch, 100, 7, 8, 0);  // 7 out runnable (preempted), 8 in
    f.sw(Role::Switch, 150, 8, 7, 1);  // 8 sleeps (S), 7 in after 50 in the run queue
    f.wake(400, 8);                    // 8 woken: S 250
    f.sw(Role::Switch, 420, 7, 8, 1);  // 7 sleeps, 8 in after 20 in the run queue
    EXPECT_EQ(f.sink.got, (std::vector<std::string>{"8R 50", "7RD50", "8S 250", "7R 270", "8RD20"}));
}

TEST(SchedRoles, SidesApartWhenTasksAreSelected) {
    Feeder f(Selection{{}, false, true});
    f.sw(Role::SwitchNext, 100, 99, 7, 0);  // 7 in
    f.sw(Role::SwitchPrev, 130, 7, 99, 2);  // 7 out, D
    f.wake(200, 7);
    f.sw(Role::SwitchNext, 205, 99, 7, 0);
    EXPECT_EQ(f.sink.got, (std::vector<std::string>{"7R 30", "7D 70", "7RD5"}));
}

TEST(SchedRoles, ShortRecordsReadAsNoTask) {
    Feeder f(Selection{});
    const int32_t half = 7;
    f.send(Role::Switch, 100, &half, sizeof half);  // no next_pid, no prev_state: ignored
    f.send(Role::Wakeup, 120, &half, 2);
    EXPECT_TRUE(f.sink.got.empty());
    EXPECT_EQ(f.states.tasks(), 0u);
}

// ---- the table ----

TEST(StateTable, RowsInOrderThenReset) {
    StateTable t(false);
    std::string out;
    t.render("WALL", "us", {}, out);
    EXPECT_EQ(out, "");  // nothing added: nothing printed
    t.add(7, kRD, 3000, 0);
    t.add(8, kS, 1000, 0);
    t.add(8, kS, 3000, 0);
    ASSERT_TRUE(t.any());
    t.render("WALL", "us", {}, out);
    EXPECT_EQ(
        out,
        "WALL \n"
        "St    calls        total(us)      min(us)      p50(us)      p95(us)      p99(us)      max(us)\n"
        "-- -------- ---------------- ------------ ------------ ------------ ------------ ------------\n"
        "S         2            4.000        1.000        2.000        2.900        2.980        3.000\n"
        "RD        1            3.000        3.000        3.000        3.000        3.000        3.000\n");
    EXPECT_FALSE(t.any());
    t.add(8, kD, 1000, 0);
    out.clear();
    t.render("WALL", "kcyc", {}, out);
    EXPECT_NE(out.find("total(kcyc)"), std::string::npos);
    EXPECT_EQ(out.find("S  "), std::string::npos);  // the rows were reset
}

TEST(StateTable, PerThreadRowsByTid) {
    StateTable t(true);
    t.add(8, kR, 2000, 0);
    t.add(7, kS, 1000, 0);
    std::string out;
    auto comm = [](uint32_t tid) -> std::string_view {
        return tid == 7 ? "worker-with-a-very-long-name" : "b";
    };
    t.render("WALL", "us", comm, out);
    EXPECT_EQ(
        out,
        "WALL \n"
        "thread comm             St    calls        total(us)      min(us)      p50(us)      p95(us)      "
        "p99(us)      max(us)\n"
        "------ ---------------- -- -------- ---------------- ------------ ------------ ------------ "
        "------------ ------------\n"
        "     7 worker-with-a-ve S         1            1.000        1.000        1.000        1.000        "
        "1.000        1.000\n"
        "     8 b                R         1            2.000        2.000        2.000        2.000        "
        "2.000        2.000\n");
}

TEST(StateTable, MissingWakeupNotes) {
    std::string out;
    append_missing_wakeup_notes(0, 0, true, out);
    EXPECT_EQ(out, "");
    append_missing_wakeup_notes(1, 2, true, out);
    EXPECT_EQ(out,
              "task-state: 1 sleep ended without a wake-up record (not reported by the kernel); counted to "
              "the switch-in, run-queue wait included\n"
              "task-state: 2 sleeps ended without a wake-up record (not reported by the kernel) nor a "
              "switch-in; not counted\n");
    out.clear();
    append_missing_wakeup_notes(0, 1, false, out);
    EXPECT_EQ(
        out,
        "task-state: 1 sleep ended without a wake-up record (not reported by the kernel); not counted\n");
}

}  // namespace
}  // namespace perfprof::sched
