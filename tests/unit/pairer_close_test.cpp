// Pairer::close (syscalls' sched_process_free, SPEC §4.6.10): the live backup of a key ends
// without its event2, handed back as Remain::Freed at the given time; other keys stay.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fake_context.h"
#include "pairing/pairer.h"

namespace perfprof::pairing {
namespace {

class Ctx final : public unit::FakeContext {
public:
    Ctx() : unit::FakeContext("WALL", 2, [](uint32_t) { return "task"; }) {}
};

struct Got : Impl {
    void two(const Pair&, const Sample& a, const Sample& b, uint64_t key) override {
        pairs.push_back({a.time, b.time, key});
    }
    void remaining(const Sample& a, uint64_t key, Remain why, uint64_t last) override {
        left.push_back({a.time, last, key, why == Remain::Freed});
    }
    void report() override {}
    std::vector<std::vector<uint64_t>> pairs, left;
};

TEST(PairerClose, FreedKeyEndsItsBackupOnly) {
    Ctx ctx;
    Env env(ctx);
    std::vector<TraceEvent*> ev;
    EventPlan plan;
    for (const char* name : {"sys_enter", "sys_exit"}) {
        auto te = std::make_unique<TraceEvent>();
        te->index = int(ev.size());
        te->sys = "raw_syscalls";
        te->name = name;
        ev.push_back(te.get());
        env.events.push_back(std::move(te));
        EventSpec s;
        s.sys = "raw_syscalls";
        s.name = name;
        plan.events.push_back(s);
    }
    Pairer p(env, 2);
    p.add_positions({{ev[0]}, {ev[1]}}, false);
    Got impl;
    p.start(ev, plan, impl, nullptr, true, true);
    const auto feed = [&](int e, uint64_t t, uint64_t key) {
        Sample s;
        s.event_index = e;
        s.event = &plan.events[size_t(e)];
        s.time = t;
        s.cpu = 0;
        p.process(*ev[size_t(e)], s, key, 3, nullptr);
    };
    feed(0, 10, 100);
    feed(0, 11, 200);
    p.close(100, 50);
    p.close(300, 60);  // no backup: nothing
    feed(1, 70, 100);  // 100's enter is gone: no pair
    feed(1, 80, 200);
    EXPECT_EQ(impl.left, (std::vector<std::vector<uint64_t>>{{10, 50, 100, 1}}));
    EXPECT_EQ(impl.pairs, (std::vector<std::vector<uint64_t>>{{11, 80, 200}}));
    EXPECT_EQ(p.live(), 0u);
}

}  // namespace
}  // namespace perfprof::pairing
