// heap::LeakPairing (kmemleak's pairing): synthetic alloc / free streams by pointer, loss
// windows that set samples aside, the selection by age and the statistics.
#include "heap/leak_pairing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perf-prof/sample.h"

namespace perfprof::heap {
namespace {

// What kmemleak does with an accepted sample of an alloc (size > 0) or a free (size 0).
struct Stream {
    void alloc(uint64_t t, uint64_t ptr, uint64_t size = 8) {
        if (!p.accept(t)) return;
        Sample s;
        s.time = t;
        Allocation& a = p.alloc(ptr);
        a.sample.assign(s);
        a.size = size;
    }
    void free(uint64_t t, uint64_t ptr) {
        if (p.accept(t)) p.free(ptr);
    }
    std::vector<uint64_t> outstanding(int64_t now = 0, uint64_t than = 0) const {
        std::vector<uint64_t> v;
        for (const Outstanding::Entry* e : p.to_report(now, than, [](uint64_t t) { return int64_t(t); }))
            v.push_back(e->first);
        return v;
    }
    LeakPairing p;
};

TEST(LeakPairing, FreesMeetTheirAllocations) {
    Stream s;
    s.alloc(10, 0xa);
    s.alloc(20, 0xb);
    s.alloc(30, 0xc);
    s.free(40, 0xb);
    s.free(50, 0xdead);  // allocated before we started: counted, nothing to meet
    EXPECT_EQ(s.outstanding(), (std::vector<uint64_t>{0xa, 0xc}));
    EXPECT_EQ(s.p.total_alloc(), 3u);
    EXPECT_EQ(s.p.total_free(), 2u);
}

TEST(LeakPairing, LossWindowSetsItsSamplesAside) {
    Stream s;
    s.alloc(10, 0xa);
    s.p.lost(100, 200);
    s.alloc(100, 0xb);  // at the window's start: before the loss
    s.free(150, 0xa);   // inside: its alloc may not be the one we hold
    s.alloc(199, 0xc);  // inside
    s.alloc(200, 0xd);  // at its end: the window closes
    s.free(150, 0xa);   // closed: accepted again, whatever its time
    EXPECT_EQ(s.outstanding(), (std::vector<uint64_t>{0xb, 0xd}));
    EXPECT_EQ(s.p.total_alloc(), 3u);
    EXPECT_EQ(s.p.total_free(), 1u);
}

TEST(LeakPairing, LossWithoutEndSetsNothingAside) {
    Stream s;
    s.p.lost(100, 0);
    s.alloc(150, 0xa);
    s.p.lost(300, 300);
    s.alloc(350, 0xb);
    EXPECT_EQ(s.outstanding(), (std::vector<uint64_t>{0xa, 0xb}));
}

TEST(LeakPairing, ReportsOnlyTheOldOnesWithThan) {
    Stream s;
    s.alloc(100, 0xa);
    s.alloc(500, 0xb);
    s.alloc(900, 0xc);
    EXPECT_EQ(s.outstanding(1000, 400), (std::vector<uint64_t>{0xa, 0xb}));
    EXPECT_EQ(s.outstanding(1000, 500), (std::vector<uint64_t>{0xa}));
    EXPECT_EQ(s.outstanding(1000, 0).size(), 3u);
}

TEST(LeakPairing, Statistics) {
    Stream s;
    s.alloc(10, 0xa);
    s.alloc(20, 0xb);
    s.free(30, 0xa);
    std::string brief, full;
    s.p.append_stats(false, brief);
    s.p.append_stats(true, full);
    EXPECT_NE(brief.find("TOTAL alloc 2 free 1\n"), std::string::npos) << brief;
    EXPECT_EQ(brief.find("ALLOC LIST"), std::string::npos) << brief;
    EXPECT_NE(full.find("ALLOC LIST num 1 mem "), std::string::npos) << full;
    EXPECT_EQ(brief.back(), '\n');
}

}  // namespace
}  // namespace perfprof::heap
