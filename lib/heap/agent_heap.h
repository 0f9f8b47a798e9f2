// The heap profile of one process as its allocator agent (lib/heap/agent/, perf-prof-heap.so)
// records it: perf-prof's end of the channel (heap/agent_channel.h, reached through
// AgentSource, which the tests implement over a ring in ordinary memory). A thread of ours drains
// the channel's ring every few milliseconds (and renews the heartbeat the agent watches) into
// the tables kmemleak --user and serve read through HeapSource: the outstanding blocks
// (address → size, stack, time of the drain), what each stack allocated, and, in full mode,
// the blocks freed since the attach until they are handed out again (for the leak scan).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "heap/agent/wire.h"
#include "heap/heap_source.h"
#include "heap/ptr_table.h"

namespace perfprof::heap {

// What AgentHeap needs of the channel (heap::AgentChannel gives it: heap/agent_attach.h).
class AgentSource {
public:
    virtual ~AgentSource() = default;
    // The shared header (read-only for us but the control words).
    virtual pph_header* header() = 0;
    // Pops the records written so far, in ring order, into `fn`; renews the heartbeat. The
    // number popped.
    virtual size_t drain(const std::function<void(const pph_rec&)>& fn) = 0;
    // The frames of stack `id` (index + 1), innermost first; empty when unknown or not ready.
    virtual std::span<const uint64_t> stack(uint32_t id) = 0;
    // Sets scan_done and wakes the thread waiting at exit.
    virtual void finish_exit_scan() = 0;
};

// The bookkeeping alone, fed one record at a time: pure, for the unit tests.
class AgentBook {
public:
    // `full`: every block is recorded (PPH_FULL), so the freed blocks are kept for the scan.
    explicit AgentBook(bool full) : full_(full) {}

    // Applies one record drained at monotonic time `now_ns`. A free of a block not outstanding
    // (allocated before the attach, or not sampled) changes no count but, in full mode, the
    // freed blocks (with the record's size, 0 when the agent did not give one).
    void apply(const pph_rec& r, uint64_t now_ns);

    struct Live {
        uint64_t size = 0;
        uint64_t time_ns = 0;
        uint32_t stack = 0;
    };
    const PtrTable<Live>& live() const { return live_; }
    const PtrTable<uint64_t>& freed_blocks() const { return freed_; }
    // Indexed by stack id (0: no stack).
    const std::vector<StackTotals>& totals() const { return totals_; }
    uint64_t allocs() const { return allocs_; }  // ALLOC records applied
    uint64_t frees() const { return frees_; }    // FREE records of a block (ptr not 0)

private:
    bool full_;
    PtrTable<Live> live_{1 << 16};
    PtrTable<uint64_t> freed_{1 << 10};
    std::vector<StackTotals> totals_;
    uint64_t allocs_ = 0, frees_ = 0;
};

// A stack's frames as HeapSource::chain gives them: PERF_CONTEXT_USER, then the frames.
std::vector<uint64_t> agent_chain(std::span<const uint64_t> frames);

class AgentHeap final : public HeapSource {
public:
    // Takes over an attached channel and, unless `period_ms` is 0 (the tests), starts a
    // thread draining it every `period_ms` (at once again while records keep coming).
    // `tick`, when given, is called by that thread after each round, outside the tables' lock
    // (kmemleak --user watches the attach and the exit there).
    explicit AgentHeap(std::unique_ptr<AgentSource> ch, unsigned period_ms = 2, std::function<void()> tick = {});
    ~AgentHeap() override;  // stops the drain thread; the channel is closed with it
    AgentHeap(const AgentHeap&) = delete;
    AgentHeap& operator=(const AgentHeap&) = delete;

    const char* name() const override { return "agent"; }
    void poll() override;
    std::vector<HeapAlloc> allocations() const override;
    std::map<uint64_t, StackTotals> alloc_totals() const override;
    std::map<uint64_t, StackTotals> growth_totals() const override { return {}; }
    std::vector<Block> freed() const override;
    const std::vector<uint64_t>& chain(uint64_t stack) override;
    HeapStats stats() const override;

    AgentSource& source() { return *ch_; }
    // The agent's own memory in the process (the channel, its tables): never roots of a scan.
    std::vector<Region> agent_ranges() const;
    // Whether the process waits at exit for the leak scan (PPH_EXIT_WAITING).
    bool exit_waiting() const;
    // Lets the process waiting at exit go on (scan_done, futex wake).
    void finish_exit_scan();
    // Records drained since the start.
    uint64_t drained() const { return drained_.load(std::memory_order_relaxed); }
    // Stops the drain thread (before a detach or the exit scan's last drain, which poll() does).
    void stop();

private:
    void drain_locked();
    void run(unsigned period_ms);

    std::unique_ptr<AgentSource> ch_;
    mutable std::mutex mu_;
    AgentBook book_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> chains_;
    std::atomic<uint64_t> drained_{0};
    std::atomic<bool> stop_{false};
    std::function<void()> tick_;
    std::thread thread_;
};

}  // namespace perfprof::heap
