// How perf-prof puts its heap agent (perf-prof-heap.so) into a process and takes it out: the
// channel (heap/agent_channel.h) created for the process, then the agent loaded with the command
// (LD_PRELOAD, set in the environment the workload is exec'd with) or injected into a running
// process (heap/injector.h: its own dlopen, then perfprof_heap_attach), and detached again
// (perfprof_heap_detach: the patched slots restored, nothing recorded any more). Shared by
// kmemleak --user and serve; AgentHeap reads the channel through the AgentSource it is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "heap/agent_heap.h"

namespace perfprof::heap {

class AgentChannel;

struct AgentSettings {
    uint64_t rate = 0;       // 0: every allocation (PPH_FULL); else sampled, mean bytes apart
    bool exit_scan = false;  // the agent waits at exit for the leak scan (kmemleak --user)
};

// Sets NAME=VALUE in the environment a launched command is exec'd with; false when the
// command cannot take it (not one perf-prof launched, or released already). The session's
// Context::set_exec_env, or serve's own perf::Workload.
using SetExecEnv = std::function<bool(const std::string& name, const std::string& value)>;

// The agent beside the running perf-prof (perf-prof-heap.so in /proc/self/exe's folder); ""
// when it is not there.
std::string agent_library();

// Why the agent cannot profile the command at `command_path` (about to be launched) or the
// running process `pid` (pid > 0): "" when it can. What perf-prof can tell up front: no agent
// beside perf-prof, or heap::agent_unusable's reasons (a static executable, a prefixed or
// linked-in allocator, another mount namespace...).
std::string agent_unusable_here(const std::string& command_path, int pid);

class AgentLink final : public AgentSource {
public:
    // A command perf-prof launched and has not released yet (process `pid`, waiting to exec):
    // its channel, and its exec environment, set through `set_env` (PERFPROF_HEAP_CHANNEL,
    // the agent prepended to LD_PRELOAD). The agent attaches when the command starts. Throws
    // Error.
    static std::unique_ptr<AgentLink> launch(int pid, const AgentSettings& s, const SetExecEnv& set_env);
    // A running process: the agent injected and attached; throws Error with the reason.
    static std::unique_ptr<AgentLink> inject(int pid, const AgentSettings& s);
    ~AgentLink() override;  // detaches

    int pid() const { return pid_; }
    bool injected() const { return injected_; }
    // pph_state (once the agent left PPH_STATE_NONE, the channel's file is unlinked), and the
    // agent's reason when it failed.
    uint32_t state();
    std::string error() const;
    // Detaches: the agent stops recording (the detach word), and an injected one restores what
    // it patched (perfprof_heap_detach, called in the process). Idempotent; never throws (a
    // process gone is detached).
    void detach() noexcept;

    pph_header* header() override;
    size_t drain(const std::function<void(const pph_rec&)>& fn) override;
    std::span<const uint64_t> stack(uint32_t id) override;
    void finish_exit_scan() override;

private:
    AgentLink(int pid, const AgentSettings& s);

    int pid_;
    bool injected_ = false, detached_ = false, unlinked_ = false;
    std::unique_ptr<AgentChannel> ch_;
};

// The one stderr line of a fallback: "perf-prof: WHO: WHY: using eBPF uprobes (about 5 µs
// per allocator call)".
void note_ebpf_fallback(const std::string& who, const std::string& why);

}  // namespace perfprof::heap
