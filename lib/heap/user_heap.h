// Heap profiling of a process (kmemleak --user): by default through the allocator agent in the
// process (perf-prof-heap.so: preloaded into a launched command, injected into a running one;
// heap/agent_attach.h), else through eBPF uprobes on its allocator's entry points and returns
// (heap/heap_probes.h). Reports what is still allocated, and what of it nothing points to any
// more (leaks), by user stack.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "perf-prof/profiler.h"

namespace perfprof::heap {

// What kmemleak's own options give the heap profile; the rest (-p/-t/workload, -g, -i,
// --flame-graph, --pprof, -v) comes from ctx.options().
enum class HeapProbesKind { Auto, Agent, Ebpf };  // --probes

struct UserHeapOptions {
    uint64_t than_ns = 0;  // --than: only allocations older than this are reported (0: all)
    bool comm = false;     // --comm
    uint64_t rate = 0;     // --rate: sampled, mean bytes between kept allocations (no leak report)
    HeapProbesKind probes = HeapProbesKind::Auto;
};

// The profiler kmemleak runs with --user. Throws Error on bad use (not attached to a process,
// no known allocator, dead pid).
std::unique_ptr<Profiler> make_user_heap(Context& ctx, const UserHeapOptions& o);

}  // namespace perfprof::heap
