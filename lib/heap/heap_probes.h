// The eBPF heap profile of one process (bpf/heap.bpf.c), shared by kmemleak --user and serve:
// uprobes on its allocator's entry points and uretprobes on their returns. Sizes are paired
// with the returned pointers per thread in the kernel; only the outstanding allocations
// (pointer → size, stack, time) and per-stack totals are kept, in maps read on demand. With a
// sampling rate only some allocations are kept, as tcmalloc and Go sample: a Poisson process
// over the bytes allocated, so an allocation of s bytes is kept with probability
// 1 - exp(-s/rate). With growth, the stacks that grow the heap (brk, anonymous mmap) are
// counted too. The destructor removes every probe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "heap/allocator.h"
#include "heap/heap_source.h"
#include "heap/reachability.h"
#include "heap/sampling.h"

namespace perfprof::heap {

struct HeapProbeOptions {
    uint64_t sample_rate = 0;   // mean bytes between kept allocations; 0: keep every allocation
    bool growth = false;        // count the stacks that grow the heap (brk, anonymous mmap)
    bool stop_at_exit = false;  // probe exit(): the program stops the process there (kmemleak)
};

class HeapProbes final : public HeapSource {
public:
    // Loads the program for process `tgid` and attaches it to `alloc`'s entry points (and
    // exit(), the growth system calls, as asked). Throws Error with the reason.
    HeapProbes(int tgid, const Allocator& alloc, const HeapProbeOptions& o);
    ~HeapProbes() override;
    HeapProbes(const HeapProbes&) = delete;
    HeapProbes& operator=(const HeapProbes&) = delete;

    const char* name() const override { return "eBPF uprobes"; }
    int tgid() const { return tgid_; }
    const HeapProbeOptions& options() const { return o_; }

    // The outstanding (kept) allocations, in no order.
    std::vector<HeapAlloc> allocations() const override;
    // What each stack allocated since the attach (kept allocations only).
    std::map<uint64_t, StackTotals> alloc_totals() const override;
    // What each stack grew the heap by since the attach (growth only). Growth inside an
    // allocator call counts for the call's stack, as its allocations do.
    std::map<uint64_t, StackTotals> growth_totals() const override;
    // Blocks freed since the attach, until allocated again (for the reachability scan; kept
    // with stop_at_exit only).
    std::vector<Block> freed() const override;
    // The user call chain of a stack key as a sample would carry it: PERF_CONTEXT_USER, then the
    // return addresses, innermost first. Empty after the marker for key 0 or an unknown key.
    const std::vector<uint64_t>& chain(uint64_t stack) override;
    HeapStats stats() const override;

    struct Impl;

private:
    int tgid_;
    HeapProbeOptions o_;
    std::unique_ptr<Impl> impl_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> chains_;
};

}  // namespace perfprof::heap
