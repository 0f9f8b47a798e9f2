// serve's heap profiles of one target process: the eBPF heap profiler (heap/heap_probes.h),
// attached on the first heap request with sampling as tcmalloc and Go sample, and removed when
// no heap request came for a while or the target is gone. Answers in gperftools' heap profile
// text (`heap profile: … @ heap_v2/RATE`, pprof unsamples it) and as Go's net/http/pprof heap
// and allocs profile.proto (unsampled here, as Go's runtime does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace perfprof::heap {
class HeapProbes;
}

namespace perfprof::serve {

struct HeapSettings {
    uint64_t rate = 512 * 1024;  // mean bytes between sampled allocations (tcmalloc's and Go's default)
    uint64_t idle_ns = 300'000'000'000;  // probes are removed after this long without a heap request
};

class HeapTarget {
public:
    // Nothing is attached yet. `command_path`: the target is a command serve launched and has
    // not exec'd yet: its allocator is found from the file, not from its maps.
    HeapTarget(int pid, const HeapSettings& s, std::string command_path = "");
    ~HeapTarget();
    HeapTarget(const HeapTarget&) = delete;
    HeapTarget& operator=(const HeapTarget&) = delete;

    // Attaches the probes unless attached. Throws Error (no known allocator, process gone, eBPF
    // refused) with a message for the client.
    void attach();
    bool attached() const;
    // Removes the probes (idle, target gone, exit).
    void detach();
    // Whether the probes have been idle past HeapSettings::idle_ns at monotonic time `now_ns`.
    bool idle(int64_t now_ns) const;

    // /pprof/heap: in-use objects and bytes by stack, and allocated since the attach, as
    // sampled, with the target's maps (MAPPED_LIBRARIES). Attaches first when needed.
    std::string heap_text();
    // /pprof/growth: the stacks that grew the heap (brk, anonymous mmap) since the attach.
    std::string growth_text();
    // /debug/pprof/heap (allocs false) and /debug/pprof/allocs (true): gzip profile.proto with
    // alloc_objects, alloc_space, inuse_objects, inuse_space, unsampled; the default sample type
    // is inuse_space, or alloc_space for allocs. Labels pid, comm, executable, build_id.
    std::string heap_proto(bool allocs);

private:
    void touch();

    int pid_;
    HeapSettings s_;
    std::string command_path_;
    std::unique_ptr<heap::HeapProbes> probes_;
    int64_t last_use_ns_ = 0;
};

}  // namespace perfprof::serve
