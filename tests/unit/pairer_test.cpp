// pairing::Pairer (multi-trace's backup / find-previous algorithm): the sleep path
// switch-out -> wake-up -> switch-in fed synthetic records, with and without the wake-up a
// guest kernel leaves out, and the notes under the report.
#include "pairing/pairer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fake_context.h"

namespace perfprof::pairing {
namespace {

class FakeContext final : public unit::FakeContext {
public:
    FakeContext() : unit::FakeContext("WALL", 2, [](uint32_t) { return "task"; }) {}
};

// The records, as the formats below lay them out.
struct SwitchRecord {
    int32_t prev_pid;
    int32_t next_pid;
    int64_t prev_state;
};
struct WakeupRecord {
    int32_t common_pid;
    int32_t pid;
    int32_t target_cpu;
};

std::vector<filter::Field> switch_fields() {
    return {{"prev_pid", 0, 4, true}, {"next_pid", 4, 4, true}, {"prev_state", 8, 8, true}};
}
std::vector<filter::Field> wakeup_fields() {
    return {{"common_pid", 0, 4, true}, {"pid", 4, 4, true}, {"target_cpu", 8, 4, true}};
}

struct Two {
    int pair;
    uint64_t t1, t2;
    bool operator==(const Two&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Two& t) {
    return o << "{pair " << t.pair << " " << t.t1 << "->" << t.t2 << "}";
}

class Recorder final : public Impl {
public:
    void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t) override {
        got.push_back({p.id, ev1.time, ev2.time});
    }
    void report() override {}
    std::vector<Two> got;
};

// -e switch-out -e MIDDLE -e switch-in, keyed by pid; MIDDLE is sched_wakeup unless named.
struct SleepPath {
    explicit SleepPath(const char* middle = "sched_wakeup") : env(ctx) {
        plan.events.resize(3);
        const char* names[] = {"sched_switch", middle, "sched_switch"};
        for (int i = 0; i < 3; i++) {
            EventSpec& e = plan.events[size_t(i)];
            e.sys = "sched";
            e.name = names[i];
            e.filter = i == 0 ? "prev_state==1" : "pid==7";
            e.fields = i == 1 ? wakeup_fields() : switch_fields();
            auto te = std::make_unique<TraceEvent>();
            te->index = te->position = i;
            te->sys = "sched";
            te->name = names[i];
            te->need_find_prev = i > 0;
            te->need_backup = i < 2;
            te->spec = &e;
            by_index.push_back(te.get());
            env.events.push_back(std::move(te));
        }
        pairer = std::make_unique<Pairer>(env, 3);
        pairer->add_pair(by_index[0], by_index[1]);
        pairer->add_pair(by_index[1], by_index[2]);
        pairer->start(by_index, plan, impl, nullptr, true, true);
    }

    void out(uint64_t t, int64_t state) { feed(0, t, SwitchRecord{7, 99, state}, sizeof(SwitchRecord)); }
    void wake(uint64_t t) { feed(1, t, SwitchRecord{}, 0, WakeupRecord{1, 7, 0}); }
    void in(uint64_t t) { feed(2, t, SwitchRecord{99, 7, 0}, sizeof(SwitchRecord)); }

    std::string notes(bool by_thread = false) {
        pairer->finish(100000);
        pairer->notes(ctx.out(), by_thread);
        return ctx.take();
    }

    FakeContext ctx;
    Env env;
    EventPlan plan;
    std::vector<TraceEvent*> by_index;
    Recorder impl;
    std::unique_ptr<Pairer> pairer;

private:
    void feed(int ev, uint64_t t, SwitchRecord sw, size_t sw_size, WakeupRecord wk = {}) {
        Sample s;
        s.event_index = ev;
        s.event = &plan.events[size_t(ev)];
        s.time = t;
        s.cpu = 0;
        if (sw_size) {
            s.raw = &sw;
            s.raw_size = uint32_t(sw_size);
        } else {
            s.raw = &wk;
            s.raw_size = sizeof wk;
        }
        pairer->process(*by_index[size_t(ev)], s, 7, 3, nullptr);
    }
};

TEST(Pairer, SleepThenRunQueueWait) {
    SleepPath p;
    p.out(100, 1);
    p.wake(150);
    p.in(160);
    EXPECT_EQ(p.impl.got, (std::vector<Two>{{0, 100, 150}, {1, 150, 160}}));
    EXPECT_EQ(p.notes(), "");
}

TEST(Pairer, SleepWithoutWakeUpPairsWithItsSwitchIn) {
    SleepPath p;
    p.out(100, 1);
    p.in(170);  // the wake-up was not recorded: the sleep ends here, no run-queue wait made up
    p.out(200, 2);
    p.wake(230);
    p.in(240);
    EXPECT_EQ(p.impl.got, (std::vector<Two>{{0, 100, 170}, {0, 200, 230}, {1, 230, 240}}));
    EXPECT_EQ(p.notes(),
              "multi-trace: 1 sleep ended without a wake-up record (not reported by the kernel); paired with "
              "the switch-in, run-queue wait included\n");
}

TEST(Pairer, PreemptedTaskIsNotASleep) {
    SleepPath p;
    p.out(100, 0x100);  // switched out runnable: its switch-in follows no wake-up
    p.in(170);
    p.out(200, 0);
    p.in(210);
    p.out(300, 16);  // dead
    p.in(310);
    EXPECT_TRUE(p.impl.got.empty());
}

TEST(Pairer, OnlyOverAPositionOfWakeUps) {
    SleepPath p("sched_stat_runtime");
    p.out(100, 1);
    p.in(170);
    EXPECT_TRUE(p.impl.got.empty());
}

TEST(Pairer, NothingPairedSaysWhatWasSeen) {
    SleepPath p;
    p.out(100, 1);
    p.out(200, 1);
    p.wake(50);  // older than the backup: not paired
    EXPECT_TRUE(p.impl.got.empty());
    EXPECT_EQ(p.notes(),
              "multi-trace: nothing paired; events seen: sched:sched_switch 2, sched:sched_wakeup 1, "
              "sched:sched_switch 0\n");
    SleepPath q;
    const std::string n = q.notes(true);
    EXPECT_NE(n.find("sched:sched_wakeup 0"), std::string::npos) << n;
    EXPECT_NE(n.find("multi-trace: attached to tasks, only the events they raise are seen"),
              std::string::npos)
        << n;
}

// -e A,B -e C -e D pairs A->C, B->C, C->D (SPEC §4.6.1); --cycle adds D->A and D->B.
struct Positions {
    Positions() : env(ctx) {
        for (int i = 0; i < 4; i++) {
            auto te = std::make_unique<TraceEvent>();
            te->index = i;
            te->name = std::string(1, char('A' + i));
            ev.push_back(te.get());
            env.events.push_back(std::move(te));
        }
    }
    std::vector<std::string> pairs() const {
        std::vector<std::string> out;
        for (const Pair& p : env.pairs) out.push_back(p.ev1->name + p.ev2->name);
        return out;
    }
    FakeContext ctx;
    Env env;
    std::vector<TraceEvent*> ev;
};

TEST(Pairer, AdjacentPositionsPair) {
    Positions t;
    Pairer pairer(t.env, 4);
    pairer.add_positions({{t.ev[0], t.ev[1]}, {t.ev[2]}, {t.ev[3]}}, false);
    EXPECT_EQ(t.pairs(), (std::vector<std::string>{"AC", "BC", "CD"}));
    for (int i : {0, 1}) {
        EXPECT_FALSE(t.ev[size_t(i)]->need_find_prev);
        EXPECT_TRUE(t.ev[size_t(i)]->need_backup);
    }
    EXPECT_TRUE(t.ev[2]->need_find_prev && t.ev[2]->need_backup);
    EXPECT_TRUE(t.ev[3]->need_find_prev);
    EXPECT_FALSE(t.ev[3]->need_backup);
}

TEST(Pairer, CycleClosesTheLastPositionOnTheFirst) {
    Positions t;
    Pairer pairer(t.env, 4);
    pairer.add_positions({{t.ev[0], t.ev[1]}, {t.ev[2]}, {t.ev[3]}}, true);
    EXPECT_EQ(t.pairs(), (std::vector<std::string>{"AC", "BC", "CD", "DA", "DB"}));
    for (const TraceEvent* e : t.ev) EXPECT_TRUE(e->need_find_prev && e->need_backup);
}

TEST(Pairer, CycleOfOnePositionPairsEachEventWithEach) {
    Positions t;
    Pairer pairer(t.env, 4);
    pairer.add_positions({{t.ev[0], t.ev[1]}}, true);
    EXPECT_EQ(t.pairs(), (std::vector<std::string>{"AA", "AB", "BA", "BB"}));
}

}  // namespace
}  // namespace perfprof::pairing
