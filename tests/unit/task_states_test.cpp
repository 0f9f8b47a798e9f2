// sched::TaskStates (task-state's state machine): synthetic streams of switch-outs, switch-ins
// and wake-ups, with and without the wake-up records a guest kernel leaves out.
#include "sched/task_states.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perf-prof/profiler.h"

using namespace perfprof;
using sched::TaskStates;

namespace {

constexpr uint64_t S = 1, D = 2, kPreempted = 0x100, kDead = 16;

struct Closed {
    uint32_t tid;
    int row;
    uint64_t ns;
    uint64_t start_time;  // 0: no copy of the starting event
    uint64_t end_time;
    bool operator==(const Closed&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Closed& c) {
    return o << "{" << c.tid << " " << sched::kRowName[c.row] << " " << c.ns << " " << c.start_time << "->"
             << c.end_time << "}";
}

class Record final : public sched::Sink {
public:
    void closed(uint32_t tid, int row, uint64_t ns, const perf::SampleCopy* start,
                const Sample& end) override {
        got.push_back({tid, row, ns, start && start->event ? start->time : 0, end.time});
    }
    std::vector<Closed> got;
};

const EventSpec kEvent;  // what a copy of a starting event points at

Sample at(uint64_t t) {
    Sample s;
    s.time = t;
    s.event = &kEvent;
    return s;
}

// Every sleep reportable, as without -S/-D.
TaskStates::Config all(bool copy = false) {
    unsigned rows = 0;
    for (int r : {sched::kS, sched::kD, sched::kT, sched::kt, sched::kI}) rows |= 1u << r;
    return {false, rows, copy};
}

TEST(TaskStates, SleepWakeUpAndRunDelay) {
    Record r;
    TaskStates ts(all(), r);
    ts.switched_in(at(10), 7);
    ts.switched_out(at(100), 7, S);
    ts.woken(at(150), 7, false);
    ts.switched_in(at(160), 7);
    ts.switched_out(at(200), 7, kPreempted);
    ts.switched_in(at(230), 7);
    ts.switched_out(at(250), 7, kDead);
    EXPECT_EQ(r.got, (std::vector<Closed>{{7, sched::kR, 90, 0, 100},
                                          {7, sched::kS, 50, 0, 150},
                                          {7, sched::kRD, 10, 0, 160},
                                          {7, sched::kR, 40, 0, 200},
                                          {7, sched::kRD, 30, 0, 230},
                                          {7, sched::kR, 20, 0, 250}}));
    EXPECT_EQ(ts.take_closed_at_switch_in(), 0u);
    EXPECT_EQ(ts.take_unmeasured(), 0u);
    EXPECT_EQ(ts.tasks(), 0u);  // dead: forgotten
}

TEST(TaskStates, SleepWithoutWakeUpEndsAtItsSwitchIn) {
    Record r;
    TaskStates ts(all(true), r);
    ts.switched_out(at(100), 7, S);
    ts.switched_in(at(170), 7);  // the wake-up was not recorded
    ts.switched_out(at(180), 7, D);
    ts.woken(at(200), 7, false);
    ts.switched_in(at(205), 7);
    // The S sleep runs to the switch-in, from the switch-out's copy; no run delay for it.
    EXPECT_EQ(r.got, (std::vector<Closed>{{7, sched::kS, 70, 100, 170},
                                          {7, sched::kR, 10, 0, 180},
                                          {7, sched::kD, 20, 180, 200},
                                          {7, sched::kRD, 5, 200, 205}}));
    EXPECT_EQ(ts.take_closed_at_switch_in(), 1u);
    EXPECT_EQ(ts.take_closed_at_switch_in(), 0u);  // taken
    EXPECT_EQ(ts.take_unmeasured(), 0u);
}

TEST(TaskStates, SleepWithNeitherWakeUpNorSwitchInIsNotMeasured) {
    Record r;
    TaskStates ts(all(), r);
    ts.switched_out(at(100), 7, S);
    ts.switched_out(at(300), 7, S);  // woken and run in between, neither recorded
    ts.woken(at(350), 7, false);
    EXPECT_EQ(r.got, (std::vector<Closed>{{7, sched::kS, 50, 0, 350}}));
    EXPECT_EQ(ts.take_unmeasured(), 1u);
    EXPECT_EQ(ts.take_closed_at_switch_in(), 0u);
}

TEST(TaskStates, UnreportedSleepsAreNeitherCountedNorNoted) {
    Record r;
    TaskStates ts({false, 1u << sched::kD, false}, r);  // --no-interruptible
    ts.switched_out(at(100), 7, S);
    ts.switched_in(at(170), 7);
    ts.switched_out(at(180), 7, S);
    ts.switched_out(at(190), 7, S);
    EXPECT_EQ(r.got, (std::vector<Closed>{{7, sched::kR, 10, 0, 180}}));
    EXPECT_EQ(ts.take_closed_at_switch_in(), 0u);
    EXPECT_EQ(ts.take_unmeasured(), 0u);
}

TEST(TaskStates, SleepsOnlyWithSwitchIns) {
    Record r;
    TaskStates ts({true, 1u << sched::kS, true}, r);  // -S with its tasks' switch-ins
    ts.switched_in(at(50), 7);                        // no record: nothing
    ts.switched_out(at(100), 7, S);
    ts.woken(at(150), 7, false);
    ts.switched_in(at(160), 7);  // its record went with the wake-up: no run delay in -S
    ts.switched_out(at(200), 7, S);
    ts.switched_in(at(290), 7);  // no wake-up recorded
    ts.switched_out(at(300), 7, S);
    ts.woken(at(320), 7, false);
    ts.woken(at(330), 8, false);  // asleep since before we looked
    EXPECT_EQ(r.got,
              (std::vector<Closed>{
                  {7, sched::kS, 50, 100, 150}, {7, sched::kS, 90, 200, 290}, {7, sched::kS, 20, 300, 320}}));
    EXPECT_EQ(ts.take_closed_at_switch_in(), 1u);
    EXPECT_EQ(ts.take_unmeasured(), 0u);
    EXPECT_EQ(ts.tasks(), 0u);
    EXPECT_EQ(ts.copied(), ts.freed());
}

TEST(TaskStates, SleepsOnlyWithoutSwitchIns) {
    Record r;
    TaskStates ts({true, 1u << sched::kS | 1u << sched::kD, false}, r);  // -S -D, whole machine
    ts.switched_out(at(100), 7, S);
    ts.switched_out(at(200), 7, D);  // its wake-up was not recorded, nor can the end be seen
    ts.woken(at(230), 7, false);
    EXPECT_EQ(r.got, (std::vector<Closed>{{7, sched::kD, 30, 0, 230}}));
    EXPECT_EQ(ts.take_unmeasured(), 1u);
}

TEST(TaskStates, ClearForgetsEveryRecord) {
    Record r;
    TaskStates ts(all(true), r);
    ts.switched_out(at(100), 7, S);
    ts.switched_out(at(100), 8, S);
    EXPECT_EQ(ts.tasks(), 2u);
    EXPECT_GT(ts.copy_bytes(), 0u);
    ts.clear();
    ts.switched_in(at(170), 7);  // after a loss: state unknown, no interval
    EXPECT_TRUE(r.got.empty());
    EXPECT_EQ(ts.take_closed_at_switch_in(), 0u);
    EXPECT_EQ(ts.copied(), 2u);
    EXPECT_EQ(ts.freed(), 2u);
}

TEST(TaskStates, IdleAndBadPidsAreIgnored) {
    Record r;
    TaskStates ts(all(), r);
    ts.switched_out(at(100), 0, S);
    ts.switched_in(at(110), -1);
    ts.woken(at(120), 0, true);
    EXPECT_EQ(ts.tasks(), 0u);
    EXPECT_TRUE(r.got.empty());
}

}  // namespace
