// The heap agent's parts that need no process of their own (lib/heap/agent/) and perf-prof's
// end of its channel (lib/heap/agent_channel): the sampler's countdown, the ring under concurrent
// producers, the channel's bounds checks on a mapping the target scribbled on. Workloads run
// under the agent: heap_agent_run_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "heap/agent/ring.h"
#include "heap/agent/sampler.h"
#include "heap/agent_channel.h"
#include "heap/sampling.h"
#include "perf-prof/error.h"

using namespace perfprof::heap;
namespace fs = std::filesystem;

namespace {

// ---- the sampler ----

TEST(HeapAgentSampler, MeanGapIsTheRate) {
    for (uint64_t rate : {uint64_t(4096), uint64_t(512 << 10)}) {
        const std::vector<uint64_t> gaps = sample_gap_quantiles(rate, PPH_GAPS);
        pph_sampler s;
        pph_sampler_seed(&s, gaps.data(), 42);
        const int n = 400000;
        double sum = 0;
        for (int i = 0; i < n; i++) sum += double(pph_sample_gap(&s, gaps.data()));
        // The exponential's standard deviation is its mean: 5 sigma of the mean of n draws, and
        // the table's own bias (its tail is cut at ln(2 * PPH_GAPS) means) of under 0.1 %.
        EXPECT_NEAR(sum / n, double(rate), double(rate) * (5.0 / std::sqrt(n) + 0.001)) << rate;
    }
}

TEST(HeapAgentSampler, KeptFractionPerSize) {
    const uint64_t rate = 64 << 10;
    const std::vector<uint64_t> gaps = sample_gap_quantiles(rate, PPH_GAPS);
    for (uint64_t size : {rate / 64, rate / 8, rate / 2, rate, 3 * rate}) {
        pph_sampler s;
        pph_sampler_seed(&s, gaps.data(), size);
        const int n = 200000;
        int kept = 0;
        for (int i = 0; i < n; i++) kept += pph_sampled(&s, gaps.data(), size);
        // Each allocation is kept independently (the gap is memoryless) with p = 1 - exp(-s/rate):
        // a binomial count, within 5 of its standard deviations (plus one, for p near 1).
        const double p = 1 - std::exp(-double(size) / double(rate));
        const double sd = std::sqrt(n * p * (1 - p));
        EXPECT_NEAR(kept, n * p, 5 * sd + 1 + 0.002 * n * p) << "size " << size;
    }
}

TEST(HeapAgentSampler, SeedsDiffer) {
    const std::vector<uint64_t> gaps = sample_gap_quantiles(1 << 20, PPH_GAPS);
    pph_sampler a, b;
    pph_sampler_seed(&a, gaps.data(), 1);
    pph_sampler_seed(&b, gaps.data(), 2);
    int same = 0;
    for (int i = 0; i < 64; i++) same += pph_sample_gap(&a, gaps.data()) == pph_sample_gap(&b, gaps.data());
    EXPECT_LT(same, 8);
}

// ---- the ring ----

struct Ring {
    std::unique_ptr<pph_header> hp = std::make_unique<pph_header>();
    std::vector<pph_rec> slots;
    pph_header* h = hp.get();
    pph_rec* ring;
    explicit Ring(uint64_t n) : slots(n) {
        h->ring_slots = n;
        ring = slots.data();
        pph_ring_init(ring, n);
    }
};

// 4 producers push `per` records each (ptr = thread << 32 | i); one consumer pops concurrently,
// `consumer_delay_us` between pops. Every record pushed is popped once, in its producer's order;
// every record refused is counted in dropped_records.
void ring_run(uint64_t slots, int per, int consumer_delay_us, bool expect_no_drops) {
    Ring r(slots);
    constexpr int kThreads = 4;
    std::atomic<int> done{0};
    std::vector<std::vector<uint32_t>> pushed(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&, t] {
            for (int i = 0; i < per; i++)
                if (pph_ring_push(r.h, r.ring, uint64_t(t) << 32 | uint32_t(i), uint64_t(i), t, PPH_REC_ALLOC,
                                  0) == 0)
                    pushed[t].push_back(uint32_t(i));
            done++;
        });
    }
    std::vector<std::vector<uint32_t>> popped(kThreads);
    pph_rec rec;
    for (;;) {
        const bool finished = done == kThreads;  // read before the pop: nothing comes after it
        if (pph_ring_pop(r.h, r.ring, &rec)) {
            const uint64_t t = rec.ptr >> 32;
            ASSERT_LT(t, uint64_t(kThreads));
            ASSERT_EQ(rec.size, rec.ptr & 0xffffffffu);
            ASSERT_EQ(rec.stack, t);
            popped[t].push_back(uint32_t(rec.ptr));
            if (consumer_delay_us) ::usleep(consumer_delay_us);
        } else if (finished) {
            break;
        }
    }
    for (auto& t : ts) t.join();
    uint64_t total_pushed = 0;
    for (int t = 0; t < kThreads; t++) {
        EXPECT_EQ(popped[t], pushed[t]) << "thread " << t;  // none lost, none twice, in order
        total_pushed += pushed[t].size();
    }
    EXPECT_EQ(total_pushed + r.h->dropped_records, uint64_t(kThreads) * per);
    EXPECT_FALSE(pph_ring_stalled(r.h));
    if (expect_no_drops)
        EXPECT_EQ(r.h->dropped_records, 0u);
    else
        EXPECT_GT(r.h->dropped_records, 0u);
}

TEST(HeapAgentRing, FourProducersExactWhenTheConsumerKeepsUp) {
    ring_run(1 << 18, 50000, 0, true);  // room for every record: nothing may be dropped
}

TEST(HeapAgentRing, FourProducersDropsCountedWhenTheConsumerLags) {
    ring_run(64, 20000, 20, false);
}

// ---- the channel's bounds ----

TEST(HeapAgentChannel, CreatesAndLaysOut) {
    AgentChannel ch({.mode = PPH_SAMPLED, .rate = 4096, .target_pid = 1234, .ring_slots = 1000});
    const pph_header* h = ch.header();
    EXPECT_EQ(h->magic, PPH_MAGIC);
    EXPECT_EQ(h->ring_slots, 1024u);
    EXPECT_EQ(h->map_size, ch.size());
    EXPECT_EQ(h->target_pid, 1234);
    EXPECT_TRUE(fs::exists(ch.path()));
    EXPECT_EQ(fs::status(ch.path()).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
    const auto* gaps = reinterpret_cast<const uint64_t*>(reinterpret_cast<const char*>(h) + h->gaps_off);
    EXPECT_EQ(gaps[0], sample_gap_quantiles(4096, PPH_GAPS)[0]);
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_NONE));
    EXPECT_EQ(ch.wait_attached(5), uint32_t(PPH_STATE_NONE));
    const std::string path = ch.path();
    ch.unlink_path();
    EXPECT_FALSE(fs::exists(path));
}

TEST(HeapAgentChannel, OwnedByTheTargetsUser) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (fchown)";
    AgentChannel ch({.target_pid = 1, .uid = 65534, .gid = 65534});
    struct stat st;
    ASSERT_EQ(::stat(ch.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(HeapAgentChannel, StackBoundsOnGarbage) {
    AgentChannel ch({.stack_slots = 16, .pool_words = 64, .max_frames = 8});
    pph_header* h = ch.header();
    auto* stacks = reinterpret_cast<pph_stack*>(reinterpret_cast<char*>(h) + h->stacks_off);
    auto* pool = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(h) + h->pool_off);
    pool[10] = 0x1234;
    pool[11] = 0x5678;
    stacks[0] = {1, 10, 2, 1};  // good
    stacks[1] = {2, 10, 2, 0};  // not ready
    stacks[2] = {3, 63, 2, 1};  // runs past the pool
    stacks[3] = {4, 0, 9, 1};   // more frames than max_frames
    stacks[4] = {5, 0xffffffffu, 0xffff, 1};
    auto s = ch.stack(1);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0], 0x1234u);
    EXPECT_EQ(s[1], 0x5678u);
    for (uint32_t id : {0u, 2u, 3u, 4u, 5u, 17u, 0xffffffffu}) EXPECT_TRUE(ch.stack(id).empty()) << id;
    // The target rewrote the layout: perf-prof keeps its own.
    h->stack_slots = 1u << 30;
    h->pool_words = 1u << 30;
    h->max_frames = 1000;
    EXPECT_TRUE(ch.stack(3).empty());
    EXPECT_TRUE(ch.stack(1000).empty());
    // An agent's error line without its NUL is cut at the field.
    std::memset(h->error, 'x', sizeof h->error);
    EXPECT_EQ(ch.error().size(), sizeof h->error);
}

TEST(HeapAgentChannel, DrainIgnoresAScribbledHeader) {
    AgentChannel ch({.ring_slots = 8});
    pph_header* h = ch.header();
    auto* ring = reinterpret_cast<pph_rec*>(reinterpret_cast<char*>(h) + h->ring_off);
    for (int i = 0; i < 5; i++) pph_ring_push(h, ring, 100 + i, 1, 0, PPH_REC_ALLOC, PPH_FN_MALLOC);
    h->ring_slots = 1ull << 40;
    h->tail = 12345678;
    std::vector<uint64_t> got;
    EXPECT_EQ(ch.drain([&](const pph_rec& r) { got.push_back(r.ptr); }), 5u);
    EXPECT_EQ(got, (std::vector<uint64_t>{100, 101, 102, 103, 104}));
}

TEST(HeapAgentChannel, StalledRecordIsSkipped) {
    AgentChannel ch({.ring_slots = 8});
    pph_header* h = ch.header();
    auto* ring = reinterpret_cast<pph_rec*>(reinterpret_cast<char*>(h) + h->ring_off);
    pph_ring_push(h, ring, 1, 1, 0, PPH_REC_ALLOC, PPH_FN_MALLOC);
    h->head++;  // a producer claimed position 1 and died before writing it
    pph_ring_push(h, ring, 3, 1, 0, PPH_REC_ALLOC, PPH_FN_MALLOC);
    std::vector<uint64_t> got;
    auto take = [&](const pph_rec& r) { got.push_back(r.ptr); };
    EXPECT_EQ(ch.drain(take), 1u);
    EXPECT_TRUE(ch.stalled());
    ch.skip_stalled();
    EXPECT_EQ(ch.drain(take), 1u);
    EXPECT_FALSE(ch.stalled());
    EXPECT_EQ(got, (std::vector<uint64_t>{1, 3}));
}

TEST(HeapAgentChannel, WrappedMappingChecksItsLayout) {
    std::vector<uint64_t> mem(8192 / 8, 0);
    auto* h = reinterpret_cast<pph_header*>(mem.data());
    h->ring_off = 4096;
    h->ring_slots = 1 << 20;  // past the mapping
    h->stacks_off = 4096;
    h->stack_slots = 4;
    h->pool_off = 4096;
    EXPECT_THROW(AgentChannel(mem.data(), 8192), perfprof::Error);
    h->ring_slots = 3;  // not a power of two
    EXPECT_THROW(AgentChannel(mem.data(), 8192), perfprof::Error);
    h->ring_slots = 4;
    EXPECT_NO_THROW(AgentChannel(mem.data(), 8192));
    EXPECT_THROW(AgentChannel(mem.data(), 100), perfprof::Error);
}

}  // namespace
