#include "heap/agent_attach.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "heap/agent_channel.h"
#include "heap/allocator.h"
#include "heap/injector.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"

namespace perfprof::heap {

namespace {

// How long the injected attach and detach calls may run in the process.
constexpr int kCallTimeoutMs = 5000;

std::string dir_of_self() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return "";
    std::string p(buf, size_t(n));
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? "." : p.substr(0, slash);
}

}  // namespace

std::string agent_library() {
    const std::string p = dir_of_self() + "/perf-prof-heap.so";
    return ::access(p.c_str(), R_OK) == 0 ? p : "";
}

std::string agent_unusable_here(const std::string& command_path, int pid) {
    if (agent_library().empty()) return "no perf-prof-heap.so beside perf-prof";
    try {
        return pid > 0 ? agent_unusable(pid) : agent_unusable(command_path);
    } catch (const Error& e) {
        return e.what();
    }
}

void note_ebpf_fallback(const std::string& who, const std::string& why) {
    std::fprintf(stderr, "perf-prof: %s: %s: using eBPF uprobes (about 5 \u00b5s per allocator call)\n",
                 who.c_str(), why.c_str());
}

AgentLink::AgentLink(int pid, const AgentSettings& s) : pid_(pid) {
    AgentChannelOptions o;
    o.mode = s.rate ? PPH_SAMPLED : PPH_FULL;
    o.rate = s.rate;
    o.flags = s.exit_scan ? PPH_F_EXIT_SCAN : 0;
    o.target_pid = pid;
    // Full tracking: a ring of 1 Mi records (32 MiB), about 50 ms of a program that does nothing
    // but allocate, so that the drain thread may lose the CPU a while without a record dropped.
    if (!s.rate) o.ring_slots = 1u << 20;
    // The channel belongs to the process's user: its agent opens it.
    struct stat st;
    const std::string proc = "/proc/" + std::to_string(pid);
    if (::stat(proc.c_str(), &st) != 0) throw Error("no process " + std::to_string(pid));
    o.uid = st.st_uid;
    o.gid = st.st_gid;
    ch_ = std::make_unique<AgentChannel>(o);
}

AgentLink::~AgentLink() {
    detach();
}

std::unique_ptr<AgentLink> AgentLink::launch(int pid, const AgentSettings& s, const SetExecEnv& set_env) {
    const std::string agent = agent_library();
    if (agent.empty()) throw Error("no perf-prof-heap.so beside perf-prof");
    std::unique_ptr<AgentLink> l(new AgentLink(pid, s));
    // Ours first: the agent's malloc must be found before the allocator it wraps (a preloaded
    // tcmalloc too, which it reaches with RTLD_NEXT).
    const char* user = std::getenv("LD_PRELOAD");
    const std::string preload = user && *user ? agent + ":" + user : agent;
    if (!set_env || !set_env(PPH_ENV, l->ch_->path()) || !set_env("LD_PRELOAD", preload))
        throw Error("process " + std::to_string(pid) + " is no command perf-prof launches");
    return l;
}

std::unique_ptr<AgentLink> AgentLink::inject(int pid, const AgentSettings& s) {
    const std::string agent = agent_library();
    if (agent.empty()) throw Error("no perf-prof-heap.so beside perf-prof");
    std::unique_ptr<AgentLink> l(new AgentLink(pid, s));
    const int rc =
        call_in_process(pid, agent, "perfprof_heap_attach", l->ch_->path(), nullptr, kCallTimeoutMs);
    if (rc != 0) {
        const std::string why = l->ch_->error();
        l->detached_ = true;  // nothing attached: nothing to restore
        throw Error("the agent could not attach: " +
                    (why.empty() ? "it returned " + std::to_string(rc) : why));
    }
    l->injected_ = true;
    l->state();  // unlinks the file
    return l;
}

uint32_t AgentLink::state() {
    const uint32_t st = ch_->state();
    // Mapped by the agent: the name goes, the mapping stays for both ends.
    if (st != PPH_STATE_NONE && !unlinked_) {
        unlinked_ = true;
        ch_->unlink_path();
    }
    return st;
}

std::string AgentLink::error() const {
    return ch_->error();
}

void AgentLink::detach() noexcept {
    if (detached_) return;
    detached_ = true;
    __atomic_store_n(&ch_->header()->detach, 1u, __ATOMIC_RELEASE);
    // An exit scan still awaited is given up: the process must not wait for us.
    ch_->finish_exit_scan();
    if (!injected_ || !perf::task_alive(pid_)) return;
    try {
        call_in_process(pid_, agent_library(), "perfprof_heap_detach", "", nullptr, kCallTimeoutMs);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "perf-prof: process %d: the heap agent's detach: %s\n", pid_, e.what());
    }
}

pph_header* AgentLink::header() {
    return ch_->header();
}

size_t AgentLink::drain(const std::function<void(const pph_rec&)>& fn) {
    return ch_->drain(fn);
}

std::span<const uint64_t> AgentLink::stack(uint32_t id) {
    return ch_->stack(id);
}

void AgentLink::finish_exit_scan() {
    ch_->finish_exit_scan();
}

}  // namespace perfprof::heap
