// pairing::Timeline (multi-trace --detail): the item parser, the release rule and the output
// window, on hand-built sched-like records rendered through a Tep fed hand-written formats.
#include "pairing/timeline.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "event/resolve.h"
#include "fake_context.h"
#include "perf-prof/error.h"
#include "tep/tep.h"
#include "tep_formats.h"

using namespace perfprof;
using perfprof::pairing::DetailSpec;
using perfprof::pairing::Env;
using perfprof::pairing::Pair;
using perfprof::pairing::parse_detail;
using perfprof::pairing::Timeline;

namespace {

constexpr const char kWall[] = "2025-01-01 00:00:00.000000";  // 26 characters

// Thread N is "taskN".
class FakeContext final : public unit::FakeContext {
public:
    FakeContext() : unit::FakeContext(kWall, 4, [](uint32_t tid) { return "task" + std::to_string(tid); }) {}
};

struct Format {
    const char *sys, *name;
    int id;
    uint32_t size;
    const char* fields;
    const char* print;
};

const Format kFormats[] = {
    {"sched", "sched_switch", 900, 64,
     unit::kSchedSwitchFields,
     "\"prev_pid=%d prev_state=%ld next_pid=%d\", REC->prev_pid, REC->prev_state, REC->next_pid"},
    {"sched", "sched_wakeup", 901, 36, unit::kSchedWakeupFields,
     "\"pid=%d target_cpu=%03d\", REC->pid, REC->target_cpu"},
    {"sched", "sched_migrate_task", 902, 40,
     "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
     "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
     "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
     "\tfield:int orig_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
     "\tfield:int dest_cpu;\toffset:36;\tsize:4;\tsigned:1;\n",
     "\"pid=%d orig_cpu=%d dest_cpu=%d\", REC->pid, REC->orig_cpu, REC->dest_cpu"},
    {"test", "mark", 903, 12, "\tfield:int val;\toffset:8;\tsize:4;\tsigned:1;\n", "\"val=%d\", REC->val"},
    {"test", "oncpu", 904, 16,
     "\tfield:int val;\toffset:8;\tsize:4;\tsigned:1;\n"
     "\tfield:int cpu;\toffset:12;\tsize:4;\tsigned:1;\n",
     "\"val=%d cpu=%d\", REC->val, REC->cpu"},
};

enum Ev { kSwitch, kWakeup, kMigrate, kMark, kOnCpu, kEvents };

// One printed line: an event line (its title or WALL, and the event's time in us) or a line
// of the window's own (-Previous, |+ alone, hidden, `After, lost).
struct Line {
    bool event = false;
    std::string title;  // the 26 columns before the marker
    uint64_t us = 0;
    std::string text;
};

std::vector<Line> parse(const std::string& out) {
    static const std::regex ev(
        R"(^(.{26})   ( {0,15}\S+) +(\d+) \S+ \[(\d{3}|---)\] (\d+)\.(\d{6}): (\S+): (.*)$)");
    std::vector<Line> lines;
    size_t pos = 0;
    while (pos < out.size()) {
        size_t nl = out.find('\n', pos);
        if (nl == std::string::npos) nl = out.size();
        Line l;
        l.text = out.substr(pos, nl - pos);
        std::smatch m;
        if (std::regex_match(l.text, m, ev)) {
            l.event = true;
            l.title = m[1];
            l.us = std::stoull(m[5]) * 1000000 + std::stoull(m[6]);
        }
        lines.push_back(l);
        pos = nl + 1;
    }
    return lines;
}

class TimelineTest : public ::testing::Test {
protected:
    TimelineTest() : env(ctx) {
        for (int i = 0; i < kEvents; ++i) {
            const Format& f = kFormats[i];
            specs[i].sys = f.sys;
            specs[i].name = f.name;
            specs[i].tp = unit::parse_format(ctx.tep(), f.sys, f.name, f.id, f.fields, f.print);
            EXPECT_NE(specs[i].tp, nullptr);
            if (specs[i].tp) specs[i].fields = event::tracepoint_fields(*specs[i].tp);
        }
    }

    void start(std::string_view detail) { tl = std::make_unique<Timeline>(env, parse_detail(detail)); }

    // A record of event `e` at `us` on `cpu` by thread `tid`, with fields set by name.
    struct Rec {
        int ev;
        uint64_t us;
        uint32_t cpu, tid;
        std::map<std::string, int64_t> f = {};
    };
    Sample make(const Rec& r) {
        std::vector<uint8_t>& raw = raws.emplace_back(kFormats[r.ev].size, 0);
        const uint16_t type = uint16_t(kFormats[r.ev].id);
        std::memcpy(raw.data(), &type, 2);
        const int32_t pid = int32_t(r.tid);
        std::memcpy(raw.data() + 4, &pid, 4);
        for (const auto& [name, v] : r.f) {
            bool found = false;
            for (const filter::Field& fd : specs[r.ev].fields) {
                if (fd.name != name) continue;
                std::memcpy(raw.data() + fd.offset, &v, fd.size);  // little endian
                found = true;
            }
            EXPECT_TRUE(found) << name;
        }
        Sample s;
        s.event = &specs[r.ev];
        s.event_index = r.ev;
        s.pid = s.tid = r.tid;
        s.cpu = r.cpu;
        s.time = r.us * 1000;
        s.raw = raw.data();
        s.raw_size = uint32_t(raw.size());
        return s;
    }
    Timeline::Node* push(const Rec& r, uint64_t key = 0, bool keyed = false) {
        return tl->push(make(r), key, keyed);
    }
    // Pushes the records, hands everything out; the nodes in order.
    std::vector<Timeline::Node*> load(const std::vector<Rec>& recs) {
        std::vector<Timeline::Node*> nodes;
        for (const Rec& r : recs) nodes.push_back(push(r));
        while (tl->next_ready(true)) {
        }
        return nodes;
    }
    std::vector<Line> window(Timeline::Node* a, Timeline::Node* b, uint64_t key = 0) {
        tl->print_window(pair, Timeline::sample(a), Timeline::sample(b), key);
        return parse(ctx.take());
    }
    // The times (us) of the event lines, in order.
    static std::vector<uint64_t> times(const std::vector<Line>& lines) {
        std::vector<uint64_t> t;
        for (const Line& l : lines)
            if (l.event) t.push_back(l.us);
        return t;
    }

    FakeContext ctx;
    Env env;
    EventSpec specs[kEvents];
    std::vector<std::vector<uint8_t>> raws;
    std::unique_ptr<Timeline> tl;
    Pair pair;
};

// A title padded to the 26 columns of WALL.
std::string pad(std::string t) {
    t.resize(std::max<size_t>(t.size(), 26), ' ');
    return t;
}

std::string hidden(int n) {
    std::string s = std::to_string(n);
    return "| " + std::string(17 - s.size(), ' ') + s + " hidden";
}

// ---- parse_detail ----

TEST(TimelineDetail, Items) {
    DetailSpec d = parse_detail("");
    EXPECT_EQ(d.before, 0u);
    EXPECT_EQ(d.after, 0u);
    EXPECT_EQ(d.hide, 0u);
    EXPECT_FALSE(d.any_same());
    EXPECT_TRUE(d.side1 && d.side2);

    d = parse_detail("samecpu,-1ms,+2ms,hide<10us");
    EXPECT_TRUE(d.samecpu);
    EXPECT_FALSE(d.samepid || d.sametid || d.samekey);
    EXPECT_EQ(d.before, 1000000u);
    EXPECT_EQ(d.after, 2000000u);
    EXPECT_EQ(d.hide, 10000u);
    EXPECT_TRUE(d.side1 && d.side2);

    d = parse_detail("5us,samepid,sametid,samekey,1");
    EXPECT_EQ(d.after, 5000u);
    EXPECT_TRUE(d.samepid && d.sametid && d.samekey);
    EXPECT_TRUE(d.side1);
    EXPECT_FALSE(d.side2);

    d = parse_detail("2,samecpu");
    EXPECT_FALSE(d.side1);
    EXPECT_TRUE(d.side2);
    d = parse_detail("1,2");
    EXPECT_TRUE(d.side1 && d.side2);
    EXPECT_EQ(parse_detail("3").after, 3u);  // a bare number other than 1 and 2 is a TIME in ns
    EXPECT_EQ(parse_detail("-1s").before, 1000000000u);
}

TEST(TimelineDetail, BadItems) {
    const std::pair<const char*, const char*> bad[] = {
        {"sameCPU", "--detail: unknown item 'sameCPU'"},
        {"samecpu,,1", "--detail: unknown item ''"},
        {"samecpu,", "--detail: unknown item ''"},
        {"-5q", "--detail: bad time in '-5q'"},
        {"+1m", "--detail: bad time in '+1m'"},
        {"hide<", "--detail: bad time in 'hide<'"},
        {"hide<1x", "--detail: bad time in 'hide<1x'"},
        {"hide>1ms", "--detail: unknown item 'hide>1ms'"},
        {"-", "--detail: bad time in '-'"},
    };
    for (const auto& [text, msg] : bad) {
        try {
            parse_detail(text);
            ADD_FAILURE() << text << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), Error::Kind::Usage) << text;
            EXPECT_STREQ(e.what(), msg);
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
        }
    }
}

// ---- keeping and releasing ----

TEST_F(TimelineTest, ReleaseKeepsTheBeforeWindowOfTheNewest) {
    start("-100us");
    for (uint64_t t = 0; t <= 1000; t += 10) {
        push({kMark, t, 0, 1});
        while (tl->next_ready(false)) {
        }
        tl->release();
    }
    // 900 .. 1000: the next sample may be an event1 whose -TIME reaches back to 900.
    EXPECT_EQ(tl->nodes(), 11u);
}

TEST_F(TimelineTest, PinKeepsTheBeforeWindowAndEverythingAfter) {
    start("-100us");
    Timeline::Node* pinned = nullptr;
    for (uint64_t t = 0; t <= 2000; t += 10) {
        push({kMark, t, 0, 1});
        while (Timeline::Node* n = tl->next_ready(false)) {
            if (Timeline::sample(n).time == 1010 * 1000) {
                pinned = n;
                tl->pin(n);
            }
        }
        tl->release();
    }
    ASSERT_NE(pinned, nullptr);
    EXPECT_EQ(tl->nodes(), (2000u - 910u) / 10 + 1);  // 910 .. 2000
    tl->pin(pinned);                                  // pins count
    tl->unpin(pinned);
    tl->release();
    EXPECT_EQ(tl->nodes(), (2000u - 910u) / 10 + 1);
    tl->unpin(pinned);
    tl->release();
    EXPECT_EQ(tl->nodes(), 11u);
}

TEST_F(TimelineTest, PinOfAnOlderNodeStopsTheRelease) {
    start("-20us");
    std::vector<Timeline::Node*> nodes;
    for (uint64_t t = 0; t < 100; t += 10) {
        nodes.push_back(push({kMark, t, 0, 1}));
        while (tl->next_ready(false)) {
        }
    }
    // Nothing released yet; pinning 50 keeps 30 and after.
    tl->pin(nodes[5]);
    tl->release();
    EXPECT_EQ(tl->nodes(), 7u);
    tl->pin(nodes[4]);  // older than the first pin: 20 and after
    tl->release();
    EXPECT_EQ(tl->nodes(), 7u);
    tl->unpin(nodes[5]);
    tl->release();
    EXPECT_EQ(tl->nodes(), 7u);
    tl->unpin(nodes[4]);
    tl->release();
    EXPECT_EQ(tl->nodes(), 3u);  // 70, 80, 90
}

TEST_F(TimelineTest, NextReadyWaitsForTheAfterWindow) {
    start("+50us");
    for (uint64_t t = 0; t <= 100; t += 10) push({kMark, t, 0, 1});
    std::vector<uint64_t> handed;
    while (Timeline::Node* n = tl->next_ready(false)) handed.push_back(Timeline::sample(n).time / 1000);
    EXPECT_EQ(handed, (std::vector<uint64_t>{0, 10, 20, 30, 40, 50}));
    tl->release();
    EXPECT_EQ(tl->nodes(), 5u);  // nothing pending is released: 60 .. 100 kept
    while (Timeline::Node* n = tl->next_ready(true)) handed.push_back(Timeline::sample(n).time / 1000);
    EXPECT_EQ(handed.size(), 11u);
    EXPECT_EQ(handed.back(), 100u);
    EXPECT_EQ(tl->next_ready(true), nullptr);
}

TEST_F(TimelineTest, MemoryReturnsToABoundAfterALongStream) {
    start("-1us,+1us");
    Timeline::Node* pinned = nullptr;
    for (uint64_t i = 0; i < 200000; ++i) {
        push({kMark, i, uint32_t(i % 4), 1});
        while (Timeline::Node* n = tl->next_ready(false)) {
            // A burst: one event1 pinned for 50000 samples.
            if (i == 10000 && !pinned) tl->pin(pinned = n);
        }
        if (i == 60000) tl->unpin(pinned);
        tl->release();
    }
    EXPECT_GE(tl->peak_nodes(), 50000u);
    EXPECT_LE(tl->nodes(), 4u);
    EXPECT_LE(tl->bytes(), 4u * 512);
}

// ---- the window ----

TEST_F(TimelineTest, BeforeAndAfterWindowsInOrder) {
    start("-3us,+2us");
    std::vector<Rec> recs;
    for (uint64_t t = 1; t <= 20; ++t)
        recs.push_back({kMark, t, uint32_t(t % 3), uint32_t(100 + t), {{"val", int64_t(t)}}});
    auto n = load(recs);
    auto lines = window(n[9], n[13]);  // 10us -> 14us
    ASSERT_EQ(lines.size(), 11u);
    EXPECT_EQ(lines[0].text, "-Previous -3.000 us");
    EXPECT_EQ(times(lines), (std::vector<uint64_t>{7, 8, 9, 10, 11, 12, 13, 14, 15}));
    EXPECT_EQ(lines[1].title, std::string("|").append(25, ' '));
    EXPECT_EQ(lines[3].title, std::string("|").append(25, ' '));
    EXPECT_EQ(lines[4].title, kWall);
    EXPECT_EQ(lines[5].title, std::string("|+ 4.000 us").append(15, ' '));
    EXPECT_EQ(lines[7].title, std::string("|").append(25, ' '));
    EXPECT_EQ(lines[8].title, kWall);
    EXPECT_EQ(lines[9].title, std::string("|").append(25, ' '));
    EXPECT_EQ(lines[10].text, "`After 1.000 us");
    // The 27-column title: 26 columns, a space, the marker column (blank), a space, the comm.
    for (const Line& l : lines) {
        if (!l.event) continue;
        EXPECT_EQ(l.text.substr(26, 3), "   ") << l.text;
        EXPECT_EQ(l.text.substr(29, 16).find_first_not_of(' ') != std::string::npos, true);
        EXPECT_NE(l.text.find("test:mark: val="), std::string::npos) << l.text;
    }
}

TEST_F(TimelineTest, NothingAroundWithoutBeforeAndAfter) {
    start("");
    std::vector<Rec> recs;
    for (uint64_t t = 1; t <= 10; ++t) recs.push_back({kMark, t, 0, 7});
    auto n = load(recs);
    auto lines = window(n[4], n[5]);  // adjacent: the |+ line alone
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0].us, 5u);
    EXPECT_FALSE(lines[1].event);
    EXPECT_EQ(lines[1].text, "|+ 1.000 us");
    EXPECT_EQ(lines[2].us, 6u);
}

TEST_F(TimelineTest, FirstAndLastNodes) {
    start("-5us,+5us,samecpu");
    auto n = load({{kMark, 1, 0, 1}, {kMark, 2, 0, 2}, {kMark, 3, 1, 3}, {kMark, 4, 0, 4}});
    auto lines = window(n[0], n[3]);
    EXPECT_EQ(times(lines), (std::vector<uint64_t>{1, 2, 4}));
    ASSERT_EQ(lines.size(), 3u);  // no -Previous, no `After
    EXPECT_EQ(lines[0].title, kWall);
    EXPECT_EQ(lines[1].title.substr(0, 11), "|+ 3.000 us");
    EXPECT_EQ(lines[2].title, kWall);
}

TEST_F(TimelineTest, SameCpuFiltersByCpuAndCpuField) {
    start("samecpu,-10us,+10us");
    std::vector<Rec> recs;
    for (uint64_t t = 1; t <= 30; ++t) recs.push_back({kMark, t, uint32_t(t % 3), uint32_t(100 + t)});
    recs[11] = {kOnCpu, 12, 2, 150, {{"cpu", 1}}};  // on CPU 2 but about CPU 1
    auto n = load(recs);
    auto lines = window(n[9], n[18]);  // 10us on CPU 1 -> 19us on CPU 1
    std::vector<uint64_t> want;
    for (uint64_t t = 1; t < 19 + 10; ++t)
        if (t % 3 == 1 || t == 12) want.push_back(t);
    EXPECT_EQ(times(lines), want);
    EXPECT_EQ(lines.front().text, "-Previous -9.000 us");
    EXPECT_EQ(lines.back().text, "`After 9.000 us");  // 28, the last in the window
}

TEST_F(TimelineTest, SameCpuSides) {
    // ev1 on CPU 1, ev2 on CPU 2: `1` keeps CPU 1 (and the tracked task's), `2` CPU 2.
    std::vector<Rec> recs;
    for (uint64_t t = 1; t <= 12; ++t) recs.push_back({kMark, t, uint32_t(t % 3), uint32_t(200 + t)});
    recs[3] = {kMark, 4, 1, 9};  // ev1, thread 9 on CPU 1
    recs[5] = {kMark, 6, 2, 9};  // thread 9 on CPU 2: the tracked CPU is 2 from here
    recs[7] = {kMark, 8, 2, 9};  // ev2, thread 9 on CPU 2
    // Between: 5 on CPU 2, 6 the task on CPU 2, 7 on CPU 1.
    const std::pair<const char*, std::vector<uint64_t>> cases[] = {
        {"samecpu", {4, 5, 6, 7, 8}},
        {"samecpu,1", {4, 6, 7, 8}},
        {"samecpu,2", {4, 5, 6, 8}},
    };
    for (const auto& [d, want] : cases) {
        start(d);
        raws.clear();
        auto n = load(recs);
        EXPECT_EQ(times(window(n[3], n[7])), want) << d;
    }
}

TEST_F(TimelineTest, CpuTrackingFollowsTheTask) {
    start("samecpu,+5us");
    const uint32_t T = 42;
    auto n = load({
        {kMark, 10, 1, T},                                                           // ev1: T on CPU 1
        {kMark, 11, 1, 300},                                                         // |+ title
        {kMark, 11, 0, 300},                                                         // CPU 0: no
        {kSwitch, 12, 1, T, {{"prev_pid", T}, {"prev_state", 1}, {"next_pid", 0}}},  // sleeps
        {kMark, 13, 3, 301},                                                         // CPU 3: no
        {kWakeup, 14, 0, 302, {{"pid", T}, {"target_cpu", 3}}},                      // on CPU 0, to 3
        {kMark, 15, 3, 303},                                                         // CPU 3 now: yes
        {kSwitch, 16, 3, 303, {{"prev_pid", 303}, {"next_pid", T}}},                 // runs on 3
        {kMigrate, 17, 0, 304, {{"pid", T}, {"orig_cpu", 3}, {"dest_cpu", 2}}},      // to CPU 2
        {kMark, 18, 3, 305},                                                         // CPU 3: no
        {kMark, 19, 2, 306},                                                         // CPU 2: yes
        {kMark, 20, 0, 307},                                                         // CPU 0: no
        {kMark, 21, 2, T},                                                           // ev2 on CPU 2
        {kMark, 22, 2, 308},                                                         // after: yes
        {kMark, 23, 1, 309},                                                         // CPU 1 (ev1's): yes
        {kMark, 24, 3, 310},                                                         // no
    });
    auto lines = window(n[0], n[12]);
    EXPECT_EQ(times(lines), (std::vector<uint64_t>{10, 11, 12, 14, 15, 16, 17, 19, 21, 22, 23}));
    std::map<uint64_t, std::string> title;
    for (const Line& l : lines)
        if (l.event) title[l.us] = l.title;
    EXPECT_EQ(title[11], pad("|+ 11.000 us"));  // the first between carries the latency
    EXPECT_EQ(title[12], pad("|        2.000 [sleeping]"));
    EXPECT_EQ(title[14], pad("|        4.000 [wakeup]"));
    EXPECT_EQ(title[15], pad("|"));
    EXPECT_EQ(title[16], pad("|        6.000 [running]"));
    EXPECT_EQ(title[17], pad("|        7.000 [migrate]"));
    EXPECT_EQ(title[22], pad("|"));
    EXPECT_EQ(lines.back().text, "`After 3.000 us");
}

TEST_F(TimelineTest, CpuTrackingReasons) {
    start("samecpu");
    const uint32_t T = 42;
    auto n = load({
        {kMark, 10, 1, T},
        {kMark, 11, 1, 5},                                                           // the |+ title
        {kSwitch, 12, 1, T, {{"prev_pid", T}, {"prev_state", 0}, {"next_pid", 5}}},  // preempted
        {kMigrate, 13, 1, 6, {{"pid", T}, {"orig_cpu", 1}, {"dest_cpu", 2}}},
        {kSwitch, 14, 2, 7, {{"prev_pid", 7}, {"next_pid", T}}},
        {kSwitch, 15, 2, T, {{"prev_pid", T}, {"prev_state", 2}, {"next_pid", 7}}},  // D
        {kMark, 16, 3, T},                                                           // the task on CPU 3
        {kMark, 17, 3, T},
    });
    auto lines = window(n[0], n[7]);
    std::map<uint64_t, std::string> title;
    for (const Line& l : lines)
        if (l.event) title[l.us] = l.title;
    EXPECT_EQ(title[12], pad("|        2.000 [preempt]"));
    EXPECT_EQ(title[13], pad("|        3.000 [migrate]"));
    EXPECT_EQ(title[14], pad("|        4.000 [running]"));
    EXPECT_EQ(title[15], pad("|        5.000 [waiting]"));
    EXPECT_EQ(title[16], pad("|        6.000 [running]"));
}

TEST_F(TimelineTest, SwitchNamesTheTaskThatRan) {
    start("samecpu");
    auto n = load({
        {kMark, 10, 1, 42},
        {kMark, 11, 1, 5},
        {kSwitch, 12, 1, 5, {{"prev_pid", 5}, {"next_pid", 6}}},
        {kSwitch, 15, 1, 6, {{"prev_pid", 6}, {"next_pid", 7}}},  // task 6 ran 3 us
        {kMark, 16, 1, 42},
    });
    // prev_comm is empty in these records: the name is the task's.
    auto lines = window(n[0], n[4]);
    ASSERT_EQ(times(lines), (std::vector<uint64_t>{10, 11, 12, 15, 16}));
    EXPECT_EQ(lines[3].title, pad("|        3.000 task6"));
}

TEST_F(TimelineTest, HideCollapsesRuns) {
    start("hide<10us");
    auto n = load({
        {kMark, 0, 0, 1},
        {kMark, 100, 0, 1},  // 100 after ev1: printed, with the latency
        {kMark, 101, 0, 1},  // a run of four ...
        {kMark, 102, 0, 1},
        {kMark, 103, 0, 1},
        {kMark, 104, 0, 1},  // ... whose last is shown
        {kMark, 200, 0, 1},
        {kMark, 203, 0, 1},  // a run of one: shown without a hidden line
        {kMark, 300, 0, 1},
        {kMark, 301, 0, 1},  // a run that event2 ends
        {kMark, 302, 0, 1},
        {kMark, 400, 0, 1},  // ev2
    });
    auto lines = window(n[0], n[11]);
    std::vector<std::string> got;
    for (const Line& l : lines) got.push_back(l.event ? std::to_string(l.us) : l.text);
    EXPECT_EQ(got, (std::vector<std::string>{"0", "100", hidden(3), "104", "200", "203", "300", hidden(1),
                                             "302", "400"}));
    EXPECT_EQ(lines[1].title.substr(0, 13), "|+ 400.000 us");
}

TEST_F(TimelineTest, HideRunRightAfterEvent1) {
    start("hide<10us");
    auto n =
        load({{kMark, 0, 0, 1}, {kMark, 1, 0, 1}, {kMark, 2, 0, 1}, {kMark, 3, 0, 1}, {kMark, 50, 0, 1}});
    auto lines = window(n[0], n[4]);
    std::vector<std::string> got;
    for (const Line& l : lines) got.push_back(l.event ? std::to_string(l.us) : l.text);
    EXPECT_EQ(got, (std::vector<std::string>{"0", "|+ 50.000 us", hidden(2), "3", "50"}));
}

TEST_F(TimelineTest, EveryFiftiethEventBetweenIsTimed) {
    start("");
    std::vector<Rec> recs;
    for (uint64_t t = 0; t <= 121; ++t) recs.push_back({kMark, t, 0, 1});
    auto n = load(recs);
    auto lines = window(n[0], n[121]);
    ASSERT_EQ(lines.size(), 122u);
    EXPECT_EQ(lines[50].title.substr(0, 13), "|- 50.000 us ");
    EXPECT_EQ(lines[100].title.substr(0, 14), "|- 100.000 us ");
    EXPECT_EQ(lines[51].title, std::string("|").append(25, ' '));
}

TEST_F(TimelineTest, SamePidTidKey) {
    std::vector<Rec> recs = {
        {kMark, 1, 0, 10},                                          // ev1: thread 10
        {kMark, 2, 0, 11},                                          // no
        {kWakeup, 3, 0, 12, {{"pid", 10}, {"target_cpu", 0}}},      // pid-like field = 10
        {kMark, 4, 0, 20},                                          // ev2's thread
        {kSwitch, 5, 0, 13, {{"prev_pid", 13}, {"next_pid", 20}}},  // next_pid = 20
        {kMark, 6, 0, 10},                                          // ev1's thread
        {kSwitch, 7, 0, 0, {{"prev_pid", 0}, {"next_pid", 0}}},     // pid 0 never matches
        {kMark, 8, 0, 20},                                          // ev2: thread 20
    };
    auto run = [&](const char* d) {
        start(d);
        raws.clear();
        std::vector<Timeline::Node*> n;
        for (size_t i = 0; i < recs.size(); ++i) n.push_back(push(recs[i], i % 2 ? 5 : 6, i != 6));
        while (tl->next_ready(true)) {
        }
        return times(window(n[0], n[7], 6));
    };
    EXPECT_EQ(run("sametid"), (std::vector<uint64_t>{1, 3, 4, 5, 6, 8}));
    EXPECT_EQ(run("samepid"), (std::vector<uint64_t>{1, 3, 4, 5, 6, 8}));
    EXPECT_EQ(run("sametid,1"), (std::vector<uint64_t>{1, 3, 6, 8}));
    EXPECT_EQ(run("samepid,2"), (std::vector<uint64_t>{1, 4, 5, 8}));
    // Key 6 on the even positions, keyed except the pid-0 switch.
    EXPECT_EQ(run("samekey"), (std::vector<uint64_t>{1, 3, 5, 8}));
}

TEST_F(TimelineTest, WithPinsTheStreamKeepsTheWindow) {
    // The profiler's loop: push, pair what is ready, pin event1, release; the window printed
    // when event2 is handed out still has its -TIME before and +TIME after.
    start("-5us,+5us");
    Timeline::Node* ev1 = nullptr;
    std::vector<uint64_t> got;
    for (uint64_t t = 0; t < 1000; ++t) {
        push({kMark, t, 0, 1});
        while (Timeline::Node* n = tl->next_ready(false)) {
            const uint64_t us = Timeline::sample(n).time / 1000;
            if (us == 500) tl->pin(ev1 = n);
            if (us == 600) {
                tl->print_window(pair, Timeline::sample(ev1), Timeline::sample(n), 0);
                got = times(parse(ctx.take()));
                tl->unpin(ev1);
            }
        }
        tl->release();
        EXPECT_LE(tl->nodes(), 120u);
    }
    ASSERT_EQ(got.size(), 110u);  // 495 .. 604
    EXPECT_EQ(got.front(), 495u);
    EXPECT_EQ(got.back(), 604u);
}

TEST_F(TimelineTest, LostRemainder) {
    start("samecpu,hide<1us");
    auto n =
        load({{kMark, 10, 1, 9}, {kMark, 11, 0, 3}, {kMark, 12, 1, 3}, {kMark, 20, 1, 4}, {kMark, 40, 1, 4}});
    tl->print_lost(Timeline::sample(n[0]), 0, 30 * 1000);
    auto lines = parse(ctx.take());
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[0].title, kWall);
    EXPECT_EQ(lines[1].us, 12u);
    EXPECT_EQ(lines[1].title, std::string("|").append(25, ' '));
    EXPECT_EQ(lines[2].us, 20u);
    EXPECT_EQ(lines[3].text, "| >=       20.000 us, event2 may be lost.");
}

}  // namespace
