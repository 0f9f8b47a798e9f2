// pairing::Feed (multi-trace's samples on their way to the Pairer): straight without --detail;
// through the timeline with it, paired only once the window after them is there, and drained
// before a loss and at the end so that pairs are decided in time order.
#include "pairing/feed.h"

#include <gtest/gtest.h>

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

// What reached the implementation: "A100->B150 k1" pairs, "lost A200 k2" / "exit ..." remainders.
class Recorder final : public Impl {
public:
    void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) override {
        got.push_back(p.ev1->name + std::to_string(ev1.time) + "->" + p.ev2->name + std::to_string(ev2.time) +
                      " k" + std::to_string(key));
    }
    void remaining(const Sample& ev1, uint64_t key, Remain why, uint64_t) override {
        got.push_back(std::string(why == Remain::Lost ? "lost " : "exit ") + "t" + std::to_string(ev1.time) +
                      " k" + std::to_string(key));
    }
    void report() override {}
    std::vector<std::string> got;
};

// -e A -e B, keyed by expression values the test gives; --detail=+50 when `detail`.
struct Path {
    explicit Path(bool detail) : env(ctx) {
        plan.events.resize(2);
        for (int i = 0; i < 2; i++) {
            EventSpec& e = plan.events[size_t(i)];
            e.sys = "test";
            e.name = i ? "B" : "A";
            auto te = std::make_unique<TraceEvent>();
            te->index = te->position = i;
            te->sys = "test";
            te->name = e.name;
            te->spec = &e;
            by_index.push_back(te.get());
            env.events.push_back(std::move(te));
        }
        pairer = std::make_unique<Pairer>(env, 2);
        pairer->add_positions({{by_index[0]}, {by_index[1]}}, false);
        if (detail) {
            DetailSpec d;
            d.after = 50;
            timeline = std::make_unique<Timeline>(env, d);
            env.timeline = timeline.get();
        }
        pairer->start(by_index, plan, impl, timeline.get(), true, true);
        feed = std::make_unique<Feed>(ctx, *pairer, by_index, timeline.get(), 1000);
    }

    void push(int ev, uint64_t t, uint64_t key) {
        Sample s;
        s.event_index = ev;
        s.event = &plan.events[size_t(ev)];
        s.time = t;
        s.cpu = 0;
        s.instance = 0;
        feed->push(*by_index[size_t(ev)], s, key);
    }

    FakeContext ctx;
    EventPlan plan;  // the specs the events point at
    Env env;
    Recorder impl;
    std::vector<TraceEvent*> by_index;
    std::unique_ptr<Timeline> timeline;
    std::unique_ptr<Pairer> pairer;
    std::unique_ptr<Feed> feed;
};

TEST(Feed, StraightToThePairer) {
    Path p(false);
    p.push(0, 100, 1);
    p.push(1, 150, 1);
    EXPECT_EQ(p.impl.got, (std::vector<std::string>{"A100->B150 k1"}));
    p.push(0, 200, 2);
    p.feed->finish();
    EXPECT_EQ(p.impl.got, (std::vector<std::string>{"A100->B150 k1", "exit t200 k2"}));
    EXPECT_EQ(p.feed->newest(), 200u);
}

TEST(Feed, DetailPairsOnceTheWindowAfterIsThere) {
    Path p(true);
    p.push(0, 100, 1);
    p.push(1, 120, 1);
    EXPECT_TRUE(p.impl.got.empty());  // B at 120 waits for the events up to 170
    p.push(0, 160, 2);
    EXPECT_TRUE(p.impl.got.empty());
    p.push(0, 175, 3);
    EXPECT_EQ(p.impl.got, (std::vector<std::string>{"A100->B120 k1"}));
}

TEST(Feed, DetailDrainsBeforeALoss) {
    Path p(true);
    p.push(0, 100, 1);
    p.push(1, 120, 1);
    p.push(0, 130, 2);
    LostRange l;
    l.start = 140;
    l.end = 150;
    p.feed->lost(l);
    // The pair that waited is decided first; the A still backed up is handed back as lost.
    EXPECT_EQ(p.impl.got, (std::vector<std::string>{"A100->B120 k1", "lost t130 k2"}));
}

TEST(Feed, DetailDrainsAtTheEnd) {
    Path p(true);
    p.push(0, 100, 1);
    p.push(1, 120, 1);
    p.feed->finish();
    EXPECT_EQ(p.impl.got, (std::vector<std::string>{"A100->B120 k1"}));
}

TEST(Feed, HorizonCoversTheWholeWindow) {
    DetailSpec d;
    d.before = 10;
    d.after = 20;
    EXPECT_EQ(Feed::horizon(1000, d, 100), 1030u);
    EXPECT_EQ(Feed::horizon(10, d, 100), 100u);
}

}  // namespace
}  // namespace perfprof::pairing
