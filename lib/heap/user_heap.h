// Heap profiling of a running process (kmemleak --user): finds the process's allocator (the
// malloc family of glibc, tcmalloc or jemalloc), probes its entry points and returns, pairs
// sizes with returned pointers per thread, and reports what is still allocated, and what of it
// nothing points to any more (leaks), by user stack.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "perf-prof/profiler.h"

namespace perfprof::heap {

// What kmemleak's own options give the heap profile; the rest (-p/-t/workload, -g, -i,
// --flame-graph, --pprof, -v) comes from ctx.options().
struct UserHeapOptions {
    uint64_t than_ns = 0;  // --than: only allocations older than this are reported (0: all)
    bool comm = false;     // --comm
};

// The profiler kmemleak runs with --user. Throws Error on bad use (not attached to a process,
// no known allocator, dead pid).
std::unique_ptr<Profiler> make_user_heap(Context& ctx, const UserHeapOptions& o);

}  // namespace perfprof::heap
