#include "serve/heap_target.h"

#include <unistd.h>

#include <cmath>
#include <map>

#include "core/text.h"
#include "core/time.h"
#include "heap/agent/wire.h"
#include "heap/agent_attach.h"
#include "heap/agent_heap.h"
#include "heap/allocator.h"
#include "heap/heap_probes.h"
#include "output/gperf_heap.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "serve/process_info.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::serve {

namespace {

std::string proc_path(int pid, const char* what) {
    return "/proc/" + std::to_string(pid) + "/" + what;
}

// What one stack holds now and allocated since the attach, as sampled.
struct StackUse {
    heap::StackTotals inuse, alloc;
};

std::map<uint64_t, StackUse> usage(const heap::HeapSource& probes) {
    std::map<uint64_t, StackUse> use;
    for (const heap::HeapAlloc& a : probes.allocations()) {
        StackUse& u = use[a.stack];
        u.inuse.bytes += a.size;
        u.inuse.objects++;
    }
    for (const auto& [key, t] : probes.alloc_totals()) use[key].alloc = t;
    // Key 0 is the allocations whose stack could not be read: no addresses, which the readers
    // of the text drop and pprof cannot place.
    use.erase(0);
    return use;
}

// The return addresses of a stack key, innermost first: the chain less its context marker.
std::vector<uint64_t> addrs_of(heap::HeapSource& probes, uint64_t key) {
    const std::vector<uint64_t>& c = probes.chain(key);
    return std::vector<uint64_t>(c.begin() + 1, c.end());
}

int64_t scaled(uint64_t v, double scale) {
    return std::llround(double(v) * scale);
}

}  // namespace

HeapTarget::HeapTarget(int pid, const HeapSettings& s, std::string command_path)
    : pid_(pid), s_(s), command_path_(std::move(command_path)) {}

HeapTarget::~HeapTarget() = default;

void HeapTarget::launch(bool growth_now, const heap::SetExecEnv& set_env) {
    if (!heap::agent_unusable_here(command_path_, 0).empty()) return;
    try {
        std::unique_ptr<heap::AgentLink> link = heap::AgentLink::launch(pid_, {s_.rate, false}, set_env);
        link_ = link.get();
        agent_ = std::make_unique<heap::AgentHeap>(std::move(link));
        if (growth_now) attach_growth();
    } catch (const Error&) {
        // attach() says why when a heap profile is asked for.
        link_ = nullptr;
        agent_.reset();
    }
}

void HeapTarget::attach() {
    const std::string who = "heap profile of process " + std::to_string(pid_);
    if (!perf::task_alive(pid_)) {
        detach();
        throw Error(who + ": the process is gone");
    }
    if (src_) return;
    std::string why;
    if (agent_) {
        // Preloaded at launch: attached when the process started, unless it could not.
        for (int i = 0; i < 2000 && link_->state() == PPH_STATE_NONE; i++) ::usleep(1000);
        if (link_->state() == PPH_STATE_RECORDING) {
            src_ = agent_.get();
        } else {
            why = link_->state() == PPH_STATE_FAILED ? "the agent could not attach: " + link_->error()
                                                     : "the agent did not attach";
            agent_.reset();
            link_ = nullptr;
        }
    } else {
        why = heap::agent_unusable_here("", pid_);
        if (why.empty()) {
            try {
                std::unique_ptr<heap::AgentLink> link = heap::AgentLink::inject(pid_, {s_.rate, false});
                link_ = link.get();
                agent_ = std::make_unique<heap::AgentHeap>(std::move(link));
                src_ = agent_.get();
            } catch (const Error& e) {
                why = e.what();
            }
        }
    }
    if (src_) {
        if (!growth_) attach_growth();
    } else {
        heap::note_ebpf_fallback(who, why);
        try {
            heap::HeapProbeOptions o;
            o.sample_rate = s_.rate;
            o.growth = true;
            o.stop_at_exit = false;  // serve only looks: the process runs on and ends as it will
            probes_ = std::make_unique<heap::HeapProbes>(pid_, find_allocator(), o);
            src_ = probes_.get();
        } catch (const Error& e) {
            throw Error(who + ": " + e.what(), e.hint(), e.kind());
        }
    }
    touch();
}

heap::Allocator HeapTarget::find_allocator() const {
    // A command not exec'd yet is looked up from its file; once it runs, from its maps.
    const bool started = !command_path_.empty() && perf::task_alive(pid_) &&
                         core::read_file_or_empty(proc_path(pid_, "comm")) != "perf-exec\n";
    return command_path_.empty() || started ? heap::find_allocator(pid_)
                                            : heap::find_allocator_for_command(command_path_);
}

void HeapTarget::attach_growth() {
    // The agent sees no brk or mmap: the eBPF program's growth tracepoints do, without its
    // allocator probes (their cost on every call is what the agent saves). A growth inside an
    // allocator call then counts for the system call's own user stack, which stops early
    // where the allocator has no frame pointers.
    heap::HeapProbeOptions o;
    o.growth = true;
    try {
        growth_ = std::make_unique<heap::HeapProbes>(pid_, heap::Allocator{}, o);
    } catch (const Error& e) {
        throw Error("heap profile of process " + std::to_string(pid_) + ": " + e.what(), e.hint(), e.kind());
    }
}

bool HeapTarget::attached() const {
    return src_ != nullptr;
}

void HeapTarget::detach() {
    src_ = nullptr;
    agent_.reset();  // the drain thread stopped, the agent detached (an injected one unpatched)
    link_ = nullptr;
    probes_.reset();
    growth_.reset();
}

bool HeapTarget::idle(int64_t now_ns) const {
    return src_ && now_ns - last_use_ns_ > int64_t(s_.idle_ns);
}

void HeapTarget::touch() {
    last_use_ns_ = core::monotonic_now_ns();
}

std::string HeapTarget::heap_text() {
    attach();
    touch();
    std::vector<output::HeapRecord> records;
    src_->poll();
    for (const auto& [key, u] : usage(*src_))
        records.push_back(
            {u.inuse.objects, u.inuse.bytes, u.alloc.objects, u.alloc.bytes, addrs_of(*src_, key)});
    return output::heap_profile_text(std::move(records), s_.rate,
                                     core::read_file_or_empty(proc_path(pid_, "maps")));
}

std::string HeapTarget::growth_text() {
    attach();
    touch();
    if (!probes_ && !growth_) attach_growth();
    heap::HeapProbes& g = probes_ ? *probes_ : *growth_;
    std::vector<output::GrowthRecord> records;
    for (const auto& [key, t] : g.growth_totals()) records.push_back({t.objects, t.bytes, addrs_of(g, key)});
    return output::growth_profile_text(std::move(records), core::read_file_or_empty(proc_path(pid_, "maps")));
}

std::string HeapTarget::heap_proto(bool allocs, sym::Symbolizer& symbols) {
    attach();
    touch();
    stack::Printer printer(symbols, false, true);
    stack::PprofStacks profile(printer, stack::PprofStacks::Kind::heap(int64_t(s_.rate)));
    const ProcessInfo p = describe_process(pid_);
    if (!p.exe.empty()) profile.label("executable", p.exe);
    if (!p.build_id.empty()) profile.label("build_id", p.build_id);
    profile.builder().default_sample_type(allocs ? "alloc_space" : "inuse_space");
    const std::string& comm = p.comm;
    // Unsampled here as Go's runtime does before it writes the profile: each pair by the
    // probability that an allocation of its average size was kept.
    src_->poll();
    for (const auto& [key, u] : usage(*src_)) {
        const double sa = output::heap_sample_scale(u.alloc.objects, u.alloc.bytes, s_.rate);
        const double si = output::heap_sample_scale(u.inuse.objects, u.inuse.bytes, s_.rate);
        const int64_t v[4] = {scaled(u.alloc.objects, sa), scaled(u.alloc.bytes, sa),
                              scaled(u.inuse.objects, si), scaled(u.inuse.bytes, si)};
        const std::vector<uint64_t>& c = src_->chain(key);
        profile.add_values(c.data(), c.size(), uint32_t(pid_), comm, v);
    }
    return profile.gzipped();
}

}  // namespace perfprof::serve
