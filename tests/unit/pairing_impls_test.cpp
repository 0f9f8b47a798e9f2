// lib/pairing: the pair, kmemprof and syscalls implementations of multi-trace (SPEC §4.6.8-10),
// fed synthetic samples through the Impl interface, their reports read back from a memory
// stream. No kernel: the records are built by hand, and the events that would be printed come
// "from a nested profiler" (Sample::from), which prints a marker line instead of rendering.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fake_context.h"
#include "pairing/model.h"
#include "perf-prof/options.h"

namespace perfprof::pairing {
namespace {

// WALL is "WALL"; thread 7 is "seven", the others unknown.
class FakeContext final : public unit::FakeContext {
public:
    FakeContext() : unit::FakeContext("WALL", 1, [](uint32_t tid) { return tid == 7 ? "seven" : "<...>"; }) {}
};

// Prints "EVENT {time}" for the samples marked as its own.
class Marker final : public Profiler {
public:
    explicit Marker(FakeContext& c) : ctx_(c) {}
    EventPlan plan() override { return {}; }
    void sample(const Sample&) noexcept override {}
    void print_event(const Sample& s) noexcept override {
        std::fprintf(ctx_.out(), "EVENT %llu\n", (unsigned long long)s.time);
    }

private:
    FakeContext& ctx_;
};

// The lines of `text`, without the bold red of a than cell (stdout may be a terminal).
std::vector<std::string> lines(const std::string& text) {
    static const std::regex ansi("\033\\[[0-9;]*m");
    std::vector<std::string> v;
    std::istringstream in(std::regex_replace(text, ansi, ""));
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
}

const std::regex kWallHead(R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} )");

// Strips a leading "{WALL(now)} ", checking it is there.
std::string no_wall(const std::string& l) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(l, m, kWallHead)) << l;
    return m.empty() ? l : m.suffix().str();
}

TraceEvent& add_event(Env& env, const char* sys, const char* name, int position,
                      const EventSpec* spec = nullptr) {
    auto e = std::make_unique<TraceEvent>();
    e->index = int(env.events.size());
    e->position = position;
    e->sys = sys;
    e->name = name;
    e->spec = spec;
    env.events.push_back(std::move(e));
    return *env.events.back();
}

void add_pair(Env& env, const TraceEvent& a, const TraceEvent& b) {
    env.pairs.push_back(Pair{int(env.pairs.size()), &a, &b});
}

// ------------------------------------------------------------------------------------- pair

TEST(PairImpl, CountsPerPairAndUnpairedPerEvent1ThenResets) {
    FakeContext ctx;
    Marker marker(ctx);
    Env env(ctx);
    TraceEvent& a = add_event(env, "s", "a", 0);
    TraceEvent& b = add_event(env, "s", "b", 1);
    TraceEvent& c = add_event(env, "s", "c", 1);
    TraceEvent& d = add_event(env, "s", "d", 2);
    add_pair(env, a, b);
    add_pair(env, a, c);
    add_pair(env, b, d);
    add_pair(env, c, d);
    auto impl = make_pair(env);

    Sample s1, s2;
    for (int i = 0; i < 3; i++) impl->two(env.pairs[0], s1, s2, 0);
    impl->two(env.pairs[1], s1, s2, 0);
    impl->two(env.pairs[3], s1, s2, 0);

    Sample un;
    un.event_index = a.index;
    un.time = 42;
    un.from = &marker;
    impl->remaining(un, 0, Remain::Exit, 100);
    un.event_index = c.index;
    un.time = 43;
    impl->remaining(un, 0, Remain::Lost, 100);
    EXPECT_EQ(ctx.take(), "EVENT 42\nEVENT 43\n");

    impl->report();
    std::vector<std::string> got;
    for (const std::string& l : lines(ctx.take())) got.push_back(no_wall(l));
    const std::vector<std::string> want = {
        "s:a unpaired 1",   "s:a s:b paired 3", "s:a s:c paired 1", "s:b unpaired 0",
        "s:b s:d paired 0", "s:c unpaired 1",   "s:c s:d paired 1",
    };
    EXPECT_EQ(got, want);

    impl->report();
    got.clear();
    for (const std::string& l : lines(ctx.take())) got.push_back(no_wall(l));
    ASSERT_EQ(got.size(), want.size());
    for (const std::string& l : got) EXPECT_TRUE(l.ends_with(" 0")) << l;
}

// --------------------------------------------------------------------------------- kmemprof

struct AllocRecord {
    uint64_t bytes;
};

const std::vector<filter::Field> kAllocFields = {{"bytes", 0, 8}};

class KmemprofTest : public ::testing::Test {
protected:
    KmemprofTest() : env(ctx) {
        alloc = &add_event(env, "kmem", "kmalloc", 0);
        fr = &add_event(env, "kmem", "kfree", 1);
        alloc->stack = fr->stack = true;
        alloc->size = std::make_unique<filter::Program>(filter::compile("bytes", kAllocFields));
        add_pair(env, *alloc, *fr);
    }

    // An allocation of `bytes` with the one-frame chain {ip}.
    Sample alloc_sample(uint64_t bytes, const uint64_t* ip) {
        recs.push_back(AllocRecord{bytes});
        Sample s;
        s.event_index = alloc->index;
        s.raw = &recs.back();
        s.raw_size = sizeof(AllocRecord);
        s.callchain = ip;
        s.callchain_nr = 1;
        return s;
    }
    Sample free_sample(const uint64_t* ip) {
        Sample s;
        s.event_index = fr->index;
        s.callchain = ip;
        s.callchain_nr = 1;
        return s;
    }

    FakeContext ctx;
    Env env;
    TraceEvent* alloc;
    TraceEvent* fr;
    std::deque<AllocRecord> recs;
};

TEST_F(KmemprofTest, SizeIsRequired) {
    alloc->size.reset();
    try {
        make_kmemprof(env);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        EXPECT_STREQ(e.what(), "kmem:kmalloc//size=?/ size attribute is not set");
    }
}

TEST_F(KmemprofTest, TopTenStacksByBytesThenSkipping) {
    auto impl = make_kmemprof(env);
    // Alloc chains 1..12: chain k allocates k objects of 100*k bytes (its bytes grow as k²);
    // every object is freed from chain 1000 + k % 2.
    uint64_t ips[13], frees[2] = {1000, 1001};
    uint64_t total = 0, objs = 0;
    for (uint64_t k = 1; k <= 12; k++) {
        ips[k] = k;
        for (uint64_t i = 0; i < k; i++) {
            impl->two(env.pairs[0], alloc_sample(100 * k, &ips[k]), free_sample(&frees[k % 2]), 0);
            total += 100 * k;
            objs++;
        }
    }
    impl->report();
    const std::vector<std::string> l = lines(ctx.take());
    ASSERT_GE(l.size(), 3u);
    EXPECT_TRUE(std::regex_match(l[0], std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} )"))) << l[0];
    EXPECT_EQ(l[1], "kmem:kmalloc => kmem:kfree");
    EXPECT_EQ(l[2], "kmem:kmalloc total alloc " + std::to_string(total) + " bytes on " +
                        std::to_string(objs) + " objects");
    ASSERT_EQ(total, 65000u);
    ASSERT_EQ(objs, 78u);
    // No printer: no stack lines, only the ten biggest chains (12 down to 3).
    char want[128];
    for (int k = 12, i = 3; k >= 3; k--, i++) {
        std::snprintf(want, sizeof want, "Allocate %d (%.1f%%) bytes on %d (%.1f%%) objects:", 100 * k * k,
                      100.0 * 100 * k * k / 65000, k, 100.0 * k / 78);
        ASSERT_LT(size_t(i), l.size());
        EXPECT_EQ(l[size_t(i)], want);
    }
    EXPECT_EQ(l[13], "Skipping alloc numbered 11..12");
    EXPECT_EQ(l[14], "kmem:kfree total free 65000 bytes on 78 objects");
    // Odd chains: 1,3,..,11 → 6 chains, 36 objects, 100*(1+9+25+49+81+121) bytes.
    EXPECT_EQ(l[15], "Free 36400 (56.0%) bytes on 42 (53.8%) objects:");
    EXPECT_EQ(l[16], "Free 28600 (44.0%) bytes on 36 (46.2%) objects:");
    ASSERT_EQ(l.size(), 18u);
    EXPECT_EQ(l[17], "");  // the blank line closing the block

    // Reset after printing: the next report is empty.
    impl->report();
    EXPECT_EQ(ctx.take(), "");
}

TEST_F(KmemprofTest, BlankLineEndsTheBlockAndOrderBreaksTiesByObjects) {
    auto impl = make_kmemprof(env);
    uint64_t a = 1, b = 2, f = 9;
    impl->two(env.pairs[0], alloc_sample(64, &a), free_sample(&f), 0);
    impl->two(env.pairs[0], alloc_sample(32, &b), free_sample(&f), 0);
    impl->two(env.pairs[0], alloc_sample(32, &b), free_sample(&f), 0);
    impl->report();
    const std::string out = ctx.take();
    EXPECT_TRUE(out.ends_with("objects:\n\n")) << out;
    const std::vector<std::string> l = lines(out);
    ASSERT_EQ(l.size(), 8u);
    EXPECT_EQ(l[3], "Allocate 64 (50.0%) bytes on 2 (66.7%) objects:");  // b: 2 objects
    EXPECT_EQ(l[4], "Allocate 64 (50.0%) bytes on 1 (33.3%) objects:");
    EXPECT_EQ(l[5], "kmem:kfree total free 128 bytes on 3 objects");
    EXPECT_EQ(l[6], "Free 128 (100.0%) bytes on 3 (100.0%) objects:");
    EXPECT_EQ(l[7], "");
}

TEST_F(KmemprofTest, NotFreedAtExitOnly) {
    auto impl = make_kmemprof(env);
    uint64_t a = 1, b = 2;
    impl->remaining(alloc_sample(100, &a), 0, Remain::Exit, 0);
    impl->remaining(alloc_sample(100, &a), 0, Remain::Exit, 0);
    impl->remaining(alloc_sample(50, &b), 0, Remain::Exit, 0);
    impl->remaining(alloc_sample(7777, &b), 0, Remain::Lost, 0);  // the free may have been lost
    impl->report();
    const std::vector<std::string> l = lines(ctx.take());
    ASSERT_EQ(l.size(), 5u);
    EXPECT_TRUE(std::regex_match(l[0], std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} )"))) << l[0];
    EXPECT_EQ(l[1], "kmem:kmalloc total alloc 250 bytes on 3 objects but not freed");
    EXPECT_EQ(l[2], "Allocate 200 (80.0%) bytes on 2 (66.7%) objects:");
    EXPECT_EQ(l[3], "Allocate 50 (20.0%) bytes on 1 (33.3%) objects:");
    EXPECT_EQ(l[4], "");
}

TEST_F(KmemprofTest, LongChainsWithTheSameHashPrefixStayApart) {
    auto impl = make_kmemprof(env);
    // Chains that differ only in their last frame, and chains of different lengths.
    uint64_t c1[3] = {1, 2, 3}, c2[3] = {1, 2, 4}, f = 9;
    for (int i = 0; i < 4; i++) {
        Sample s = alloc_sample(10, i % 2 ? c1 : c2);
        s.callchain_nr = i < 2 ? 3 : 2;
        impl->two(env.pairs[0], s, free_sample(&f), 0);
    }
    impl->report();
    const std::vector<std::string> l = lines(ctx.take());
    ASSERT_GE(l.size(), 6u);
    EXPECT_EQ(l[2], "kmem:kmalloc total alloc 40 bytes on 4 objects");
    EXPECT_EQ(l[3], "Allocate 20 (50.0%) bytes on 2 (50.0%) objects:");  // {1,2}
    EXPECT_EQ(l[4], "Allocate 10 (25.0%) bytes on 1 (25.0%) objects:");
    EXPECT_EQ(l[5], "Allocate 10 (25.0%) bytes on 1 (25.0%) objects:");
}

// --------------------------------------------------------------------------------- syscalls

// raw_syscalls:sys_enter / sys_exit records as the kernel lays them out.
struct EnterRecord {
    uint16_t common_type;
    uint8_t common_flags, common_preempt_count;
    int32_t common_pid;
    int64_t id;
    uint64_t args[6];
};
struct ExitRecord {
    uint16_t common_type;
    uint8_t common_flags, common_preempt_count;
    int32_t common_pid;
    int64_t id;
    int64_t ret;
};

EventSpec enter_spec() {
    EventSpec e;
    e.sys = "raw_syscalls";
    e.name = "sys_enter";
    e.fields = {
        {"common_type", 0, 2},      {"common_flags", 2, 1}, {"common_preempt_count", 3, 1},
        {"common_pid", 4, 4, true}, {"id", 8, 8, true},     {"args", 16, 48, false, false, false, 8, true}};
    return e;
}
EventSpec exit_spec() {
    EventSpec e;
    e.sys = "raw_syscalls";
    e.name = "sys_exit";
    e.fields = {{"common_type", 0, 2},      {"common_flags", 2, 1}, {"common_preempt_count", 3, 1},
                {"common_pid", 4, 4, true}, {"id", 8, 8, true},     {"ret", 16, 8, true}};
    return e;
}

class SyscallsTest : public ::testing::Test {
protected:
    SyscallsTest() : enter(enter_spec()), exit(exit_spec()), env(ctx) {
        ev1 = &add_event(env, "raw_syscalls", "sys_enter", 0, &enter);
        ev2 = &add_event(env, "raw_syscalls", "sys_exit", 1, &exit);
        add_pair(env, *ev1, *ev2);
    }

    // One call of `id` by `tid` from t to t + us microseconds returning `ret`.
    void call(Impl& impl, int32_t tid, int64_t id, uint64_t t, uint64_t us, int64_t ret, int64_t exit_id = -1,
              int32_t exit_tid = -1) {
        const auto [a, b] = samples(tid, id, t, us, ret, exit_id, exit_tid);
        impl.two(env.pairs[0], a, b, uint64_t(tid));
    }

    // Its sys_enter and sys_exit samples.
    std::pair<Sample, Sample> samples(int32_t tid, int64_t id, uint64_t t, uint64_t us, int64_t ret,
                                      int64_t exit_id = -1, int32_t exit_tid = -1) {
        enters.push_back(EnterRecord{1, 0, 0, tid, id, {}});
        exits.push_back(ExitRecord{2, 0, 0, exit_tid < 0 ? tid : exit_tid, exit_id < 0 ? id : exit_id, ret});
        Sample a, b;
        a.event_index = ev1->index;
        a.raw = &enters.back();
        a.raw_size = sizeof(EnterRecord);
        a.time = t;
        a.from = marker.get();
        b.event_index = ev2->index;
        b.raw = &exits.back();
        b.raw_size = sizeof(ExitRecord);
        b.time = t + us * 1000;
        b.from = marker.get();
        return {a, b};
    }

    FakeContext ctx;
    std::unique_ptr<Marker> marker = std::make_unique<Marker>(ctx);
    EventSpec enter, exit;
    Env env;
    TraceEvent* ev1;
    TraceEvent* ev2;
    std::deque<EnterRecord> enters;
    std::deque<ExitRecord> exits;
};

TEST_F(SyscallsTest, OnlyRawSyscallsEnterThenExit) {
    const char* msg = "Please use -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit";
    auto expect_usage = [&](Env& e) {
        try {
            make_syscalls(e);
            ADD_FAILURE() << "no error";
        } catch (const Error& err) {
            EXPECT_EQ(err.kind(), Error::Kind::Usage);
            EXPECT_STREQ(err.what(), msg);
        }
    };
    {
        Env e(ctx);
        TraceEvent& a = add_event(e, "raw_syscalls", "sys_exit", 0, &exit);
        TraceEvent& b = add_event(e, "raw_syscalls", "sys_enter", 1, &enter);
        add_pair(e, a, b);
        expect_usage(e);
    }
    {
        Env e(ctx);
        TraceEvent& a = add_event(e, "syscalls", "sys_enter_getpid", 0, &enter);
        TraceEvent& b = add_event(e, "syscalls", "sys_exit_getpid", 1, &exit);
        add_pair(e, a, b);
        expect_usage(e);
    }
    {
        Env e(ctx);
        TraceEvent& a = add_event(e, "raw_syscalls", "sys_enter", 0, &enter);
        TraceEvent& b = add_event(e, "raw_syscalls", "sys_exit", 1, &exit);
        add_event(e, "sched", "sched_switch", 2);
        add_pair(e, a, b);
        expect_usage(e);
    }
    EXPECT_NO_THROW(make_syscalls(env));
}

TEST_F(SyscallsTest, TableRowsAndErrors) {
    auto impl = make_syscalls(env);
    call(*impl, 7, 39, 1000, 2, 7);         // getpid 2 us
    call(*impl, 8, 39, 5000, 4, 8);         // getpid 4 us
    call(*impl, 7, 3, 9000, 1, -9);         // close EBADF: error
    call(*impl, 7, 3, 19000, 3, 0);         // close ok
    call(*impl, 7, 3, 29000, 5, -4096);     // below the error range: not an error
    call(*impl, 7, 3, 39000, 5, -4095);     // error
    call(*impl, 7, 3, 49000, 5, 0, 39);     // exit of another id: not counted
    call(*impl, 7, 3, 59000, 5, 0, -1, 9);  // exit of another thread: not counted
    call(*impl, 7, 99999, 69000, 1, 0);     // an unknown id prints the number
    impl->report();
    const std::vector<std::string> l = lines(ctx.take());
    ASSERT_EQ(l.size(), 6u);
    EXPECT_TRUE(std::regex_match(l[0], std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} )"))) << l[0];
    EXPECT_EQ(l[1],
              "syscalls                calls        total(us)      min(us)      avg(us)      max(us)    err");
    EXPECT_EQ(l[2],
              "-------------------- -------- ---------------- ------------ ------------ ------------ ------");
    EXPECT_EQ(l[3],
              "close(3)                    4           14.000        1.000        3.500        5.000      2");
    EXPECT_EQ(l[4],
              "getpid(39)                  2            6.000        2.000        3.000        4.000      0");
    EXPECT_EQ(l[5],
              "99999                       1            1.000        1.000        1.000        1.000      0");
    impl->report();
    EXPECT_EQ(ctx.take(), "");
}

TEST_F(SyscallsTest, PerThreadWithThreshold) {
    env.perins = true;
    env.than = 3000;  // 3 us
    auto impl = make_syscalls(env);
    call(*impl, 8, 39, 1000, 2, 8);
    call(*impl, 7, 39, 2000, 1, 7);
    call(*impl, 7, 3, 9000, 4, -9);  // beyond the threshold: enter and exit printed
    call(*impl, 7, 3, 19000, 1, -9);
    call(*impl, 7, 3, 29000, 1, -9);
    EXPECT_EQ(ctx.take(), "EVENT 9000\nEVENT 13000\n");
    impl->report();
    const std::vector<std::string> l = lines(ctx.take());
    ASSERT_EQ(l.size(), 6u);
    EXPECT_EQ(
        l[1],
        "thread comm             syscalls                calls        total(us)      min(us)      avg(us)  "
        "    max(us)    err   than(reqs)");
    EXPECT_EQ(
        l[2],
        "------ ---------------- -------------------- -------- ---------------- ------------ ------------ "
        "------------ ------ --------------");
    // By thread, then by calls.
    EXPECT_EQ(
        l[3],
        "7      seven            close(3)                    3            6.000        1.000        2.000  "
        "      4.000      3      1 ( 33%)");
    EXPECT_EQ(
        l[4],
        "7      seven            getpid(39)                  1            1.000        1.000        1.000  "
        "      1.000      0      0 (  0%)");
    EXPECT_EQ(
        l[5],
        "8      <...>            getpid(39)                  1            2.000        2.000        2.000  "
        "      2.000      0      0 (  0%)");
}

TEST_F(SyscallsTest, TimelineSlicesNamedByTheCall) {
    auto impl = make_syscalls(env);
    std::string name = "left over";
    auto [a, b] = samples(7, 39, 1000, 2, 7);
    EXPECT_TRUE(impl->slice_name(env.pairs[0], a, b, name));
    EXPECT_EQ(name, "getpid");
    std::tie(a, b) = samples(7, 99999, 1000, 2, 0);
    EXPECT_TRUE(impl->slice_name(env.pairs[0], a, b, name));
    EXPECT_EQ(name, "syscall 99999");
    // Not a call the table counts (another id, another thread): no slice.
    std::tie(a, b) = samples(7, 3, 1000, 2, 0, 39);
    EXPECT_FALSE(impl->slice_name(env.pairs[0], a, b, name));
    std::tie(a, b) = samples(7, 3, 1000, 2, 0, -1, 9);
    EXPECT_FALSE(impl->slice_name(env.pairs[0], a, b, name));
}

TEST(PairImplTimeline, DefaultSliceNameIsBothEvents) {
    FakeContext ctx;
    Env env(ctx);
    TraceEvent& a = add_event(env, "sched", "sched_wakeup", 0);
    TraceEvent& b = add_event(env, "sched", "sched_switch", 1);
    add_pair(env, a, b);
    auto impl = make_pair(env);
    std::string name;
    Sample s1, s2;
    EXPECT_TRUE(impl->slice_name(env.pairs[0], s1, s2, name));
    EXPECT_EQ(name, "sched_wakeup -> sched_switch");
}

TEST_F(SyscallsTest, OnlyThanWaitsForASlowCall) {
    env.than = 3000;
    env.only_than = true;
    auto impl = make_syscalls(env);
    call(*impl, 7, 39, 1000, 1, 7);
    impl->report();
    EXPECT_EQ(ctx.take(), "");  // kept
    call(*impl, 7, 39, 2000, 5, 7);
    const std::string printed = ctx.take();
    EXPECT_EQ(printed, "EVENT 2000\nEVENT 7000\n");
    impl->report();
    const std::vector<std::string> l = lines(ctx.take());
    ASSERT_EQ(l.size(), 4u);
    EXPECT_EQ(
        l[3],
        "getpid(39)                  2            6.000        1.000        3.000        5.000      0      1 "
        "( 50%)");
}

}  // namespace
}  // namespace perfprof::pairing
