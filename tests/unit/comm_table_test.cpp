// CommTable fed side-band records by hand: names across fork, exec and exit, out of order.
#include <linux/perf_event.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perf/comm_table.h"

namespace perfprof::perf {
namespace {

// A record as the side-band event writes it: header, body, then the TID|TIME sample id.
class Record {
public:
    Record(uint32_t type, uint16_t misc, const void* body, size_t len, uint32_t tid, uint64_t time) {
        const size_t body_len = (len + 7) & ~size_t(7);
        words_.resize((sizeof(perf_event_header) + body_len + 16) / 8);
        auto* h = reinterpret_cast<perf_event_header*>(words_.data());
        h->type = type;
        h->misc = misc;
        h->size = uint16_t(words_.size() * 8);
        auto* p = reinterpret_cast<uint8_t*>(h + 1);
        std::memcpy(p, body, len);
        const uint32_t ids[2] = {tid, tid};
        std::memcpy(p + body_len, ids, 8);
        std::memcpy(p + body_len + 8, &time, 8);
    }
    const perf_event_header& header() const { return *reinterpret_cast<const perf_event_header*>(words_.data()); }

private:
    std::vector<uint64_t> words_;
};

Record comm(uint32_t tid, const char* name, uint64_t time, bool exec = true) {
    uint8_t body[8 + 16] = {};
    std::memcpy(body, &tid, 4);
    std::memcpy(body + 4, &tid, 4);
    std::strncpy(reinterpret_cast<char*>(body + 8), name, 15);
    return Record(PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, body, sizeof body, tid, time);
}

Record fork(uint32_t child, uint32_t parent, uint64_t time) {
    const uint32_t f[4] = {child, parent, child, parent};
    uint8_t body[24] = {};
    std::memcpy(body, f, 16);
    std::memcpy(body + 16, &time, 8);
    return Record(PERF_RECORD_FORK, 0, body, sizeof body, child, time);
}

Record exit_of(uint32_t tid, uint64_t time) {
    const uint32_t f[4] = {tid, tid, tid, tid};
    uint8_t body[24] = {};
    std::memcpy(body, f, 16);
    std::memcpy(body + 16, &time, 8);
    return Record(PERF_RECORD_EXIT, 0, body, sizeof body, tid, time);
}

constexpr uint32_t kParent = 5000000, kChild = 5000001;  // above PID_MAX_LIMIT: never in /proc

TEST(CommTable, ForkTakesTheParentsName) {
    CommTable t(false);
    t.record(comm(kParent, "shell", 10).header());
    t.record(fork(kChild, kParent, 20).header());
    EXPECT_EQ(t.find(kChild).value_or(""), "shell");
}

TEST(CommTable, AnOlderExecReadLaterRenamesTheForksAfterIt) {
    // The exec (time 10) and the fork (time 20) were on different CPUs; the fork's ring was
    // read first, so the child copied the name from before the exec.
    CommTable t(false);
    t.set(kParent, "sh");
    t.record(fork(kChild, kParent, 20).header());
    t.record(comm(kParent, "make", 10).header());
    EXPECT_EQ(t.find(kParent).value_or(""), "make");
    EXPECT_EQ(t.find(kChild).value_or(""), "make");
}

TEST(CommTable, AnExecAfterTheForkLeavesTheChild) {
    CommTable t(false);
    t.set(kParent, "sh");
    t.record(fork(kChild, kParent, 20).header());
    t.record(comm(kParent, "make", 30).header());
    EXPECT_EQ(t.find(kChild).value_or(""), "sh");
}

TEST(CommTable, AChildThatExecedKeepsItsOwnName) {
    CommTable t(false);
    t.set(kParent, "sh");
    t.record(fork(kChild, kParent, 20).header());
    t.record(comm(kChild, "true", 25).header());
    t.record(comm(kParent, "make", 10).header());
    EXPECT_EQ(t.find(kChild).value_or(""), "true");
}

TEST(CommTable, ExitedTasksGoAtGcWithTheirChildLists) {
    CommTable t(false);
    t.set(kParent, "sh");
    const size_t before = t.size();  // the machine's tasks, read from /proc
    std::vector<uint32_t> forgotten;
    t.forget = [&](uint32_t tid) { forgotten.push_back(tid); };
    // Many short children of one long-lived parent, each exiting: the table must not keep
    // them (nor a list of them) past the keep window.
    const uint32_t n = 20000;
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t t0 = 1000 + uint64_t(i) * 10;
        t.record(fork(kChild + i, kParent, t0).header());
        t.record(comm(kChild + i, "true", t0 + 1).header());
        t.record(exit_of(kChild + i, t0 + 2).header());
        t.record(comm(kParent, "sh", t0 + 3, false).header());
    }
    t.record(comm(kParent, "sh", 1000 + uint64_t(n) * 10 + 1'000'000, false).header());
    t.gc(1000);
    EXPECT_EQ(forgotten.size(), n);
    EXPECT_EQ(t.size(), before);
    // A fork after the collection still follows its parent.
    t.record(fork(kChild, kParent, 2'000'000'000).header());
    t.record(comm(kParent, "bash", 1'999'999'999).header());
    EXPECT_EQ(t.find(kChild).value_or(""), "bash");
}

}  // namespace
}  // namespace perfprof::perf
