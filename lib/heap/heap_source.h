// Where a heap profile of one process comes from: the eBPF uprobes on its allocator
// (heap/heap_probes.h) or the allocator agent inside it (heap/agent_heap.h). kmemleak --user
// and serve read either through this interface: the outstanding blocks, what each stack
// allocated, the blocks freed since the attach (for the leak scan), and the stacks as call chains.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "heap/reachability.h"

namespace perfprof::heap {

struct HeapAlloc {
    uint64_t ptr = 0, size = 0;
    uint64_t stack = 0;    // stack key (0: none)
    uint64_t time_ns = 0;  // CLOCK_MONOTONIC
    uint32_t tid = 0;      // 0 when the source does not know it (the agent)
};

struct StackTotals {
    uint64_t bytes = 0, objects = 0;  // objects: allocations, or calls that grew the heap
};

struct HeapStats {
    uint64_t total_alloc = 0, total_free = 0;  // calls recorded (allocations: those kept)
    uint64_t dropped_allocs = 0, dropped_stacks = 0;
    uint64_t exit_sp = 0;  // stack pointer and thread of the exit() call (stop_at_exit)
    uint32_t exit_tid = 0;
};

class HeapSource {
public:
    virtual ~HeapSource() = default;

    // A short name for messages and the report's header: "eBPF uprobes", "agent".
    virtual const char* name() const = 0;
    // Brings the tables up to date with what the process did (the agent's ring is drained);
    // nothing to do where the tables are the kernel's maps.
    virtual void poll() {}

    // The outstanding (kept) allocations, in no order.
    virtual std::vector<HeapAlloc> allocations() const = 0;
    // What each stack allocated since the attach (kept allocations only).
    virtual std::map<uint64_t, StackTotals> alloc_totals() const = 0;
    // What each stack grew the heap by since the attach (brk, anonymous mmap): empty where
    // the source does not count growth.
    virtual std::map<uint64_t, StackTotals> growth_totals() const = 0;
    // Blocks freed since the attach, until allocated again (the leak scan leaves them out of
    // its roots: their stale contents point anywhere).
    virtual std::vector<Block> freed() const = 0;
    // The user call chain of a stack key as a sample would carry it: PERF_CONTEXT_USER, then
    // the return addresses, innermost (the allocating call site) first. Only the marker for
    // key 0 or an unknown key.
    virtual const std::vector<uint64_t>& chain(uint64_t stack) = 0;
    virtual HeapStats stats() const = 0;
};

}  // namespace perfprof::heap
