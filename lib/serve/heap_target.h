// serve's heap profiles of one target process: the allocator agent in the process
// (heap/agent_attach.h: preloaded into a command serve launches, injected into a running one),
// else the eBPF heap profiler (heap/heap_probes.h), attached on the first heap request with
// sampling as tcmalloc and Go sample, and removed when no heap request came for a while or the
// target is gone. /pprof/growth (the stacks that grow the heap with brk and mmap) stays on the
// eBPF program's growth tracepoints, attached with the agent (without its allocator probes).
// Answers in gperftools' heap profile text (`heap profile: … @ heap_v2/RATE`, pprof unsamples
// it) and as Go's net/http/pprof heap and allocs profile.proto (unsampled here, as Go's runtime
// does).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace perfprof::sym {
class Symbolizer;
}

namespace perfprof::heap {
struct Allocator;
class AgentHeap;
class AgentLink;
class HeapProbes;
class HeapSource;
}  // namespace perfprof::heap

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

    // A command serve launched, not released yet: the agent goes into it with LD_PRELOAD (set
    // through `set_env`, the command's exec environment: heap::SetExecEnv) and records
    // (sampled) from its start; attach() then only takes it up. Nothing when the agent cannot
    // be used (attach() falls back to eBPF then). `growth_now`: the growth tracepoints too,
    // before the command runs (serve --heap).
    void launch(bool growth_now, const std::function<bool(const std::string&, const std::string&)>& set_env);
    bool has_agent() const { return agent_ != nullptr; }
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
    // Symbolized through `symbols` (serve's, kept across requests).
    std::string heap_proto(bool allocs, sym::Symbolizer& symbols);

private:
    void touch();
    heap::Allocator find_allocator() const;
    void attach_growth();

    int pid_;
    HeapSettings s_;
    std::string command_path_;
    heap::HeapSource* src_ = nullptr;           // agent_ or probes_, once attached
    std::unique_ptr<heap::AgentHeap> agent_;    // the agent's channel, drained by its own thread
    heap::AgentLink* link_ = nullptr;           // agent_'s
    std::unique_ptr<heap::HeapProbes> probes_;  // eBPF: the fallback
    std::unique_ptr<heap::HeapProbes> growth_;  // eBPF growth probes (/pprof/growth)
    int64_t last_use_ns_ = 0;
};

}  // namespace perfprof::serve
