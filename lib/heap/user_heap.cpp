#include "heap/user_heap.h"

#include "perf-prof/error.h"

namespace perfprof::heap {

std::unique_ptr<Profiler> make_user_heap(Context&, const UserHeapOptions&) {
    throw Error::usage("kmemleak --user: not available yet");
}

}  // namespace perfprof::heap
