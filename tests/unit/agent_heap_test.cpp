// perf-prof's end of the heap agent's channel: the bookkeeping of the records the ring carries
// (outstanding blocks, per-stack totals, freed blocks, unknown frees), fed through the ring's
// own functions (ring.h) as the agent writes them; the address table under it; the chains.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "heap/agent/ring.h"
#include "heap/agent_channel.h"
#include "heap/agent_heap.h"
#include "heap/ptr_table.h"

using namespace perfprof::heap;

namespace {

// A ring in ordinary memory, with the header fields ring.h reads.
struct Ring {
    pph_header h{};
    std::vector<pph_rec> slots;
    explicit Ring(uint64_t n) : slots(n) {
        h.ring_slots = n;
        pph_ring_init(slots.data(), n);
    }
    void alloc(uint64_t ptr, uint64_t size, uint32_t stack, uint16_t fn = PPH_FN_MALLOC) {
        ASSERT_EQ(pph_ring_push(&h, slots.data(), ptr, size, stack, PPH_REC_ALLOC, fn), 0);
    }
    void free(uint64_t ptr, uint16_t fn = PPH_FN_FREE) {
        ASSERT_EQ(pph_ring_push(&h, slots.data(), ptr, 0, 0, PPH_REC_FREE, fn), 0);
    }
    // Drains every record into `b`; the number drained.
    size_t drain(AgentBook& b, uint64_t now = 1000) {
        pph_rec r;
        size_t n = 0;
        while (pph_ring_pop(&h, slots.data(), &r)) {
            b.apply(r, now);
            n++;
        }
        return n;
    }
};

std::map<uint64_t, std::pair<uint64_t, uint32_t>> live_of(const AgentBook& b) {
    std::map<uint64_t, std::pair<uint64_t, uint32_t>> m;
    b.live().for_each([&](uint64_t p, const AgentBook::Live& l) { m[p] = {l.size, l.stack}; });
    return m;
}

std::map<uint64_t, uint64_t> freed_of(const AgentBook& b) {
    std::map<uint64_t, uint64_t> m;
    b.freed_blocks().for_each([&](uint64_t p, uint64_t s) { m[p] = s; });
    return m;
}

}  // namespace

TEST(AgentBook, OutstandingAndTotalsAreExact) {
    Ring ring(64);
    AgentBook b(true);
    ring.alloc(0x1000, 48, 1);
    ring.alloc(0x2000, 4096, 2, PPH_FN_CALLOC);
    ring.alloc(0x3000, 48, 1);
    ring.free(0x1000);
    EXPECT_EQ(ring.drain(b, 777), 4u);
    const auto live = live_of(b);
    ASSERT_EQ(live.size(), 2u);
    EXPECT_EQ(live.at(0x2000), (std::pair<uint64_t, uint32_t>{4096, 2}));
    EXPECT_EQ(live.at(0x3000), (std::pair<uint64_t, uint32_t>{48, 1}));
    EXPECT_EQ(b.live().find(0x3000)->time_ns, 777u);
    // Totals count what was allocated, freed or not.
    ASSERT_GE(b.totals().size(), 3u);
    EXPECT_EQ(b.totals()[1].bytes, 96u);
    EXPECT_EQ(b.totals()[1].objects, 2u);
    EXPECT_EQ(b.totals()[2].bytes, 4096u);
    EXPECT_EQ(b.allocs(), 3u);
    EXPECT_EQ(b.frees(), 1u);
}

TEST(AgentBook, FreesOfUnknownBlocksChangeNoCountButAreFreeMemory) {
    Ring ring(16);
    AgentBook b(true);
    ring.free(0xdead0);  // allocated before the attach
    ring.free(0);        // free(NULL)
    ring.alloc(0x1000, 10, 1);
    ring.free(0xbeef0);
    ring.drain(b);
    EXPECT_EQ(live_of(b).size(), 1u);
    EXPECT_EQ(b.totals()[1].objects, 1u);
    // Free memory for the scan, of a size the scan finds out (0 here: the agent gave none).
    EXPECT_EQ(freed_of(b), (std::map<uint64_t, uint64_t>{{0xdead0, 0}, {0xbeef0, 0}}));
    EXPECT_EQ(b.frees(), 2u);  // free(NULL) is no call on a block
    // Handed out again: no free memory any more.
    ring.alloc(0xdead0, 8, 1);
    ring.drain(b);
    EXPECT_EQ(freed_of(b), (std::map<uint64_t, uint64_t>{{0xbeef0, 0}}));
}

TEST(AgentBook, ReallocSequences) {
    Ring ring(32);
    AgentBook b(true);
    // realloc moves the block: its old block freed first, then the new one.
    ring.alloc(0x1000, 16, 1);
    ring.free(0x1000, PPH_FN_REALLOC);
    ring.alloc(0x5000, 64, 3, PPH_FN_REALLOC);
    // realloc in place: the same address given back and handed out again, with its new size.
    ring.free(0x5000, PPH_FN_REALLOC);
    ring.alloc(0x5000, 128, 3, PPH_FN_REALLOC);
    ring.drain(b);
    const auto live = live_of(b);
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live.at(0x5000), (std::pair<uint64_t, uint32_t>{128, 3}));
    // 0x1000 is free memory; 0x5000 was freed and handed out again: not free memory.
    EXPECT_EQ(freed_of(b), (std::map<uint64_t, uint64_t>{{0x1000, 16}}));
    EXPECT_EQ(b.totals()[3].objects, 2u);
    EXPECT_EQ(b.totals()[3].bytes, 192u);
}

TEST(AgentBook, FreedBlocksOnlyInFullMode) {
    Ring ring(16);
    AgentBook sampled(false);
    ring.alloc(0x1000, 16, 1);
    ring.free(0x1000);
    ring.drain(sampled);
    EXPECT_TRUE(freed_of(sampled).empty());
    EXPECT_TRUE(live_of(sampled).empty());
}

TEST(AgentBook, AnAllocationOverAStaleEntryReplacesIt) {
    // The ring dropped a free (full): the address comes back allocated, its new record wins.
    Ring ring(16);
    AgentBook b(true);
    ring.alloc(0x1000, 16, 1);
    ring.alloc(0x1000, 32, 2);
    ring.drain(b);
    EXPECT_EQ(live_of(b).at(0x1000), (std::pair<uint64_t, uint32_t>{32, 2}));
}

TEST(AgentBook, AFullRingDropsAndCounts) {
    Ring ring(4);
    for (uint64_t i = 1; i <= 4; i++) ring.alloc(i * 16, 1, 0);
    EXPECT_EQ(pph_ring_push(&ring.h, ring.slots.data(), 0x100, 1, 0, PPH_REC_ALLOC, 0), -1);
    EXPECT_EQ(ring.h.dropped_records, 1u);
    AgentBook b(true);
    EXPECT_EQ(ring.drain(b), 4u);
    ring.alloc(0x200, 1, 0);  // room again once drained
    EXPECT_EQ(ring.drain(b), 1u);
    EXPECT_EQ(b.live().size(), 5u);
}

TEST(AgentBook, Chain) {
    const std::vector<uint64_t> frames{0x401234, 0x401300, 0x401400};
    const std::vector<uint64_t> c = agent_chain(frames);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(c[0], uint64_t(PERF_CONTEXT_USER));
    EXPECT_EQ(std::vector<uint64_t>(c.begin() + 1, c.end()), frames);
    EXPECT_EQ(agent_chain({}), std::vector<uint64_t>{uint64_t(PERF_CONTEXT_USER)});
}

TEST(PtrTable, AgreesWithAMapUnderRandomOperations) {
    PtrTable<uint64_t> t(4);
    std::map<uint64_t, uint64_t> ref;
    std::mt19937_64 rng(7);
    for (int i = 0; i < 200000; i++) {
        // Few distinct keys, 16-byte aligned as blocks are: long probe runs, many deletions.
        const uint64_t key = ((rng() % 3000) + 1) * 16;
        if (rng() % 3) {
            t.put(key, uint64_t(i));
            ref[key] = uint64_t(i);
        } else {
            uint64_t v = 0;
            const bool had = ref.erase(key) != 0;
            ASSERT_EQ(t.erase(key, &v), had);
        }
        if (i % 1000 == 0) {
            ASSERT_EQ(t.size(), ref.size());
            for (const auto& [k, v] : ref) ASSERT_TRUE(t.find(k) && *t.find(k) == v);
        }
    }
    std::map<uint64_t, uint64_t> all;
    t.for_each([&](uint64_t k, uint64_t v) { all[k] = v; });
    EXPECT_EQ(all, ref);
}

// The consumer's speed: records applied per second, as the drain thread applies them (one
// allocation and its free, over a working set of 64 Ki blocks). Printed for the report; the
// bound only catches a pathological table (a debug or sanitizer build is far slower).
TEST(AgentBook, Throughput) {
    Ring ring(1 << 16);
    AgentBook b(true);
    std::mt19937_64 rng(3);
    const uint64_t kBlocks = 1 << 16, kRounds = 40;
    uint64_t n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t round = 0; round < kRounds; round++) {
        for (uint64_t i = 0; i < kBlocks / 2; i++) {
            const uint64_t p = 0x7f0000000000ull + ((rng() % kBlocks) << 5);
            ring.alloc(p, 32, uint32_t(i % 64) + 1);
            ring.free(p ^ 0x20);
        }
        n += ring.drain(b);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = double(n) / s;
    std::printf("agent consumer: %.1f M records/s (push + pop + apply, one thread)\n", rate / 1e6);
    EXPECT_EQ(n, kRounds * kBlocks);
    EXPECT_GT(rate, 1e6);
}

namespace {

// The channel as AgentHeap reads it, in ordinary memory: the ring above, a stack table.
struct MemSource final : AgentSource {
    Ring ring{256};
    std::map<uint32_t, std::vector<uint64_t>> stacks;
    int heartbeats = 0, scans_done = 0;
    explicit MemSource(uint32_t mode) { ring.h.mode = mode; }
    pph_header* header() override { return &ring.h; }
    size_t drain(const std::function<void(const pph_rec&)>& fn) override {
        heartbeats++;
        pph_rec r;
        size_t n = 0;
        while (pph_ring_pop(&ring.h, ring.slots.data(), &r)) {
            fn(r);
            n++;
        }
        return n;
    }
    std::span<const uint64_t> stack(uint32_t id) override {
        auto it = stacks.find(id);
        return it == stacks.end() ? std::span<const uint64_t>() : std::span<const uint64_t>(it->second);
    }
    void finish_exit_scan() override { scans_done++; }
};

}  // namespace

TEST(AgentHeap, ReadsTheChannelThroughHeapSource) {
    auto owned = std::make_unique<MemSource>(PPH_FULL);
    MemSource& src = *owned;
    src.stacks[1] = {0x401111, 0x402222};
    src.stacks[2] = {0x403333};
    AgentHeap heap(std::move(owned), 0);
    src.ring.alloc(0x1000, 48, 1);
    src.ring.alloc(0x2000, 100, 2);
    src.ring.alloc(0x3000, 7, 0);
    src.ring.free(0x2000);
    src.ring.free(0x9990);  // before the attach
    heap.poll();
    EXPECT_EQ(heap.drained(), 5u);
    EXPECT_GE(src.heartbeats, 1);
    std::map<uint64_t, uint64_t> live;
    for (const HeapAlloc& a : heap.allocations()) live[a.ptr] = a.size;
    EXPECT_EQ(live, (std::map<uint64_t, uint64_t>{{0x1000, 48}, {0x3000, 7}}));
    const auto totals = heap.alloc_totals();
    ASSERT_EQ(totals.size(), 2u);  // key 0 (no stack) has no totals, as with the probes
    EXPECT_EQ(totals.at(2).bytes, 100u);
    EXPECT_EQ(heap.chain(1), (std::vector<uint64_t>{uint64_t(PERF_CONTEXT_USER), 0x401111, 0x402222}));
    EXPECT_EQ(heap.chain(0), std::vector<uint64_t>{uint64_t(PERF_CONTEXT_USER)});
    EXPECT_EQ(heap.chain(77), std::vector<uint64_t>{uint64_t(PERF_CONTEXT_USER)});
    std::map<uint64_t, uint64_t> freed;
    for (const Block& b : heap.freed()) freed[b.addr] = b.size;
    EXPECT_EQ(freed, (std::map<uint64_t, uint64_t>{{0x2000, 100}, {0x9990, 0}}));
    src.ring.h.dropped_records = 3;
    src.ring.h.exit_sp = 0x7ffc0000;
    src.ring.h.exit_tid = 42;
    const HeapStats st = heap.stats();
    EXPECT_EQ(st.total_alloc, 3u);
    EXPECT_EQ(st.total_free, 2u);
    EXPECT_EQ(st.dropped_allocs, 3u);
    EXPECT_EQ(st.exit_sp, 0x7ffc0000u);
    EXPECT_EQ(st.exit_tid, 42u);
    EXPECT_FALSE(heap.exit_waiting());
    src.ring.h.exit_state = PPH_EXIT_WAITING;
    EXPECT_TRUE(heap.exit_waiting());
    heap.finish_exit_scan();
    EXPECT_EQ(src.scans_done, 1);
}

TEST(AgentHeap, AgentRangesAreTheHeadersNonEmptyOnes) {
    auto owned = std::make_unique<MemSource>(PPH_SAMPLED);
    owned->ring.h.agent_ranges[0] = {0x1000, 0x2000};
    owned->ring.h.agent_ranges[3] = {0x8000, 0x9000};
    AgentHeap heap(std::move(owned), 0);
    const std::vector<Region> r = heap.agent_ranges();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].start, 0x1000u);
    EXPECT_EQ(r[1].end, 0x9000u);
}

TEST(AgentHeap, TheDrainThreadKeepsUp) {
    auto owned = std::make_unique<MemSource>(PPH_FULL);
    MemSource& src = *owned;
    AgentHeap heap(std::move(owned), 1);
    // More records than the ring holds: the producer waits for room as a test, never the agent.
    uint64_t pushed = 0;
    for (uint64_t i = 1; i <= 20000; i++) {
        while (pph_ring_push(&src.ring.h, src.ring.slots.data(), i * 16, 8, 0, PPH_REC_ALLOC, 0) != 0)
            std::this_thread::yield();
        pushed++;
    }
    heap.poll();
    EXPECT_EQ(heap.allocations().size(), pushed);
}

namespace {

// A real channel (heap/agent_channel.h) as AgentHeap reads it in perf-prof.
struct RealSource final : AgentSource {
    perfprof::heap::AgentChannel ch;
    explicit RealSource(const perfprof::heap::AgentChannelOptions& o) : ch(o) {}
    pph_header* header() override { return ch.header(); }
    size_t drain(const std::function<void(const pph_rec&)>& fn) override { return ch.drain(fn); }
    std::span<const uint64_t> stack(uint32_t id) override { return ch.stack(id); }
    void finish_exit_scan() override { ch.finish_exit_scan(); }
};

}  // namespace

// The consumer's drain rate over a real channel: a full ring (1 Mi records, as kmemleak --user
// sizes it) of allocations and frees over 64 Ki live blocks, drained by AgentHeap::poll().
TEST(AgentHeap, DrainRateOverARealChannel) {
    auto owned = std::make_unique<RealSource>(perfprof::heap::AgentChannelOptions{.ring_slots = 1u << 20});
    RealSource& src = *owned;
    pph_header* h = src.header();
    auto* ring = reinterpret_cast<pph_rec*>(reinterpret_cast<char*>(h) + h->ring_off);
    AgentHeap heap(std::move(owned), 0);
    std::mt19937_64 rng(5);
    double seconds = 0;
    uint64_t n = 0;
    for (int round = 0; round < 4; round++) {
        for (uint64_t i = 0; i < h->ring_slots / 2; i++) {
            const uint64_t p = 0x7f0000000000ull + ((rng() % (1 << 16)) << 5);
            ASSERT_EQ(pph_ring_push(h, ring, p, 32, 0, PPH_REC_ALLOC, PPH_FN_MALLOC), 0);
            ASSERT_EQ(pph_ring_push(h, ring, p ^ 0x20, 0, 0, PPH_REC_FREE, PPH_FN_FREE), 0);
        }
        const auto t0 = std::chrono::steady_clock::now();
        heap.poll();
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        n += h->ring_slots;
    }
    EXPECT_EQ(heap.drained(), n);
    EXPECT_GT(__atomic_load_n(&h->heartbeat_ns, __ATOMIC_RELAXED), 0u);  // renewed by the drain
    std::printf("agent consumer: %.1f M records/s drained (AgentChannel::drain into AgentHeap's tables)\n",
                double(n) / seconds / 1e6);
    EXPECT_GT(double(n) / seconds, 1e6);
}
