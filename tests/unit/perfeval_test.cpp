// lib/perf/perfeval: --perfeval-cpus / --perfeval-pids counting and the per-tick line, and
// --sampling-limit (SPEC §1.4).
#include "perf/perfeval.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "perf-prof/error.h"

namespace perfprof::perf {
namespace {

std::string report(PerfEval& e, uint64_t interval_ms, bool* exceeded = nullptr) {
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    const bool x = e.report(f, "trace", interval_ms);
    std::fclose(f);
    std::string s(buf, len);
    free(buf);
    if (exceeded) *exceeded = x;
    // Drop the 27-character WALL prefix of each line.
    std::string out;
    for (size_t i = 0; i < s.size();) {
        const size_t nl = s.find('\n', i);
        out += s.substr(i + 27, nl - i - 27 + 1);
        i = nl + 1;
    }
    return out;
}

Sample at(uint32_t cpu, uint32_t pid, uint32_t tid) {
    Sample s;
    s.cpu = cpu;
    s.pid = pid;
    s.tid = tid;
    return s;
}

TEST(PerfEval, InactiveWithoutLists) {
    Options o;
    PerfEval e(o);
    EXPECT_FALSE(e.active());
}

TEST(PerfEval, NeedsAnInterval) {
    Options o;
    o.perfeval_cpus = "0";
    EXPECT_THROW(PerfEval e(o), Error);
}

TEST(PerfEval, CpusPerSecondAndInstances) {
    Options o;
    o.perfeval_cpus = "1,3";
    o.interval_ms = 500;
    PerfEval e(o);
    ASSERT_TRUE(e.active());
    for (int i = 0; i < 10; i++) e.count(at(0, 1, 1));
    for (int i = 0; i < 4; i++) e.count(at(1, 1, 1));
    e.count(at(3, 1, 1));
    // Per second over a 500 ms tick: x2.
    EXPECT_EQ(report(e, 500), "trace: perfeval cpus(1,3): sampled 30 events matched 10 on 2 instances\n");
    // Reset after each tick; a tick without samples prints nothing.
    EXPECT_EQ(report(e, 500), "");
}

TEST(PerfEval, PidsMatchTheProcessAndCountThreads) {
    Options o;
    const int me = getpid();
    o.perfeval_pids = std::to_string(me);
    o.interval_ms = 1000;
    PerfEval e(o);
    e.count(at(0, uint32_t(me), uint32_t(me)));
    e.count(at(1, uint32_t(me), uint32_t(me) + 1));
    e.count(at(1, uint32_t(me) + 7, uint32_t(me) + 7));
    EXPECT_EQ(report(e, 1000), "trace: perfeval pids(" + std::to_string(me) +
                                   "): sampled 3 events matched 2 on 2 instances\n");
    o.perfeval_pids = "2147483646";
    EXPECT_THROW(PerfEval bad(o), Error);
}

TEST(PerfEval, LimitNamesTheInstancesAndCloses) {
    Options o;
    o.perfeval_cpus = "0-1";
    o.interval_ms = 1000;
    o.sampling_limit = 5;
    PerfEval e(o);
    for (int i = 0; i < 6; i++) e.count(at(1, 1, 1));
    for (int i = 0; i < 2; i++) e.count(at(0, 1, 1));
    bool exceeded = false;
    EXPECT_EQ(
        report(e, 1000, &exceeded),
        "trace: perfeval cpus(0-1): sampled 8 events matched 8 on 2 instances, exceeds the limit, exit\n"
        "trace: perfeval: cpu 0 sampled 2 events\n"
        "trace: perfeval: cpu 1 sampled 6 events\n");
    EXPECT_TRUE(exceeded);
    for (int i = 0; i < 5; i++) e.count(at(1, 1, 1));
    report(e, 1000, &exceeded);
    EXPECT_FALSE(exceeded);
}

TEST(PerfEval, CpusNoneOnline) {
    Options o;
    o.perfeval_cpus = "4095";
    o.interval_ms = 100;
    try {
        PerfEval e(o);
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(
            std::string(e.what()).rfind("--perfeval-cpus 4095: none of these CPUs is online (online: ", 0),
            0u)
            << e.what();
    }
}

}  // namespace
}  // namespace perfprof::perf
