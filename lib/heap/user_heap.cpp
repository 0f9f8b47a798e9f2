#include "heap/user_heap.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>

#include "core/time.h"
#include "event/planned_event.h"
#include "heap/agent_attach.h"
#include "heap/agent_heap.h"
#include "heap/allocator.h"
#include "heap/heap_probes.h"
#include "heap/injector.h"
#include "heap/leak_report.h"
#include "heap/reachability.h"
#include "output/gperf_heap.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "perf/workload.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::heap {

namespace {

// How long a launched command's agent has to attach before the eBPF path takes over.
constexpr int64_t kAttachTimeoutNs = 3'000'000'000;

// The allocator lookup and the probes are shared with serve: their errors say whose they are here.
Error ours(const Error& e) {
    return Error(std::string("kmemleak --user: ") + e.what(), e.hint(), e.kind());
}

bool wait_stopped(int pid) {
    for (int i = 0; i < 3000; i++) {  // up to 3 s
        const char st = perf::task_state(pid);
        if (st == 'T' || st == 't') return true;
        if (!perf::alive_state(st)) return false;
        ::usleep(1000);
    }
    return false;
}

// `roots` less the `holes` (the agent's own memory: its channel holds the addresses of every
// block it recorded, which would make them all look reachable).
std::vector<Region> without(std::vector<Region> roots, const std::vector<Region>& holes) {
    for (const Region& h : holes) {
        std::vector<Region> out;
        for (const Region& r : roots) {
            if (h.end <= r.start || h.start >= r.end) {
                out.push_back(r);
                continue;
            }
            if (r.start < h.start) out.push_back({r.start, h.start});
            if (h.end < r.end) out.push_back({h.end, r.end});
        }
        roots = std::move(out);
    }
    return roots;
}

int64_t scaled(uint64_t v, double scale) {
    return std::llround(double(v) * scale);
}

class UserHeap final : public Profiler {
public:
    UserHeap(Context& ctx, const UserHeapOptions& o)
        : ctx_(ctx), o_(o), printer_(ctx.symbolizer(), false, true) {
        const Options& opt = ctx.options();
        if (ctx.threads().empty())
            throw Error::usage("kmemleak --user: profiles a process: give -p PID or a command after --");
        tgid_ = perf::tgid_of(ctx.threads().front());
        if (tgid_ <= 0) throw Error("kmemleak --user: no process " + std::to_string(ctx.threads().front()));
        for (int t : ctx.threads())
            if (perf::tgid_of(t) != tgid_)
                throw Error::usage("kmemleak --user: profiles one process; -p/-t name threads of several");
        launched_ = opt.pids.empty() && opt.tids.empty() && !opt.workload.empty();
        const std::string command = launched_ ? perf::command_path(opt.workload.front()) : "";
        try {
            alloc_ = launched_ ? find_allocator_for_command(command) : find_allocator(tgid_);
        } catch (const Error& e) {
            throw ours(e);
        }
        if (!alloc_.exit_offset)
            throw Error("kmemleak --user: no exit() in " + alloc_.path +
                        "'s process: cannot stop it at exit to look for leaks");
        if (opt.flame_graph_given)
            flame_ = std::make_unique<stack::FlameGraph>(&printer_, opt.flame_graph, "bytes");
        if (opt.pprof_given) {
            pprof_ = std::make_unique<stack::PprofStacks>(
                opt.pprof, printer_, stack::PprofStacks::Kind::heap(int64_t(o_.rate ? o_.rate : 1)));
        }
        start_ns_ = core::monotonic_now_ns();

        std::string why;
        if (o_.probes != HeapProbesKind::Ebpf) {
            why = agent_unusable_here(command, launched_ ? 0 : tgid_);
            if (why.empty()) {
                const AgentSettings s{o_.rate, o_.rate == 0};
                try {
                    const SetExecEnv set_env = [this](const std::string& name, const std::string& value) {
                        return ctx_.set_exec_env(tgid_, name, value);
                    };
                    std::unique_ptr<AgentLink> link =
                        launched_ ? AgentLink::launch(tgid_, s, set_env) : AgentLink::inject(tgid_, s);
                    link_ = link.get();
                    agent_ = std::make_unique<AgentHeap>(std::move(link), 2, [this] { agent_tick(); });
                    src_ = agent_.get();
                    agent_ok_ = link_->state() == PPH_STATE_RECORDING;
                } catch (const Error& e) {
                    why = e.what();
                }
            }
            if (!agent_ && o_.probes == HeapProbesKind::Agent)
                throw Error::usage("kmemleak --user --probes=agent: " + why);
        }
        if (!agent_) {
            if (opt.dwarf_stack)
                throw Error::usage(
                    "kmemleak --user: --call-graph dwarf needs the agent (its stacks are walked with CFI); "
                    "the eBPF path reads frame-pointer stacks only" +
                    (why.empty() ? std::string() : ": " + why));
            if (o_.probes == HeapProbesKind::Auto) note_ebpf_fallback("kmemleak --user", why);
            start_probes(alloc_, true);
        }
        ready_ = true;  // agent_tick() may look now: agent_ is set
    }

    ~UserHeap() override {
        // The drain thread calls agent_tick(): it goes before anything agent_tick() uses.
        if (agent_) agent_->stop();
    }

    EventPlan plan() override {
        // The session's one event, a tracepoint. eBPF path with the stop at exit: the SIGSTOP
        // the program on exit() sends (the process is stopped by the time this sample is
        // read); otherwise the exit of the process's tasks (the agent waits at exit by itself,
        // its channel's exit_state: this sample only ends a sampled profile). Not a uprobe on
        // exit(): an inherited uprobe event makes every thread the process creates fail
        // (clone: EFAULT, the kernel reads the probe's path again, at perf-prof's address, in
        // the process).
        const bool stop = probes_ && probes_->options().stop_at_exit;
        const std::string text = stop ? "signal:signal_generate/sig==19/" : "sched:sched_process_exit";
        std::vector<event::Resolved> rs = event::resolve_event_list(text, ctx_.tep(), 0, {});
        EventPlan p;
        for (const event::Resolved& r : rs) p.events.push_back(event::planned_event(r, false, false, false));
        p.inherit = true;  // threads created later call exit() too
        p.pages = 1;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (int(s.pid) != tgid_) return;
        std::lock_guard<std::mutex> g(mu_);
        if (!src_) return;
        if (probes_ && probes_->options().stop_at_exit) {
            // A SIGSTOP of the process: the program's at exit() (it notes the thread), not
            // someone else's.
            if (!probes_->stats().exit_tid) return;
        } else if (int(s.tid) != tgid_) {
            return;  // only the process's end, not a thread's
        }
        // The agent's full profile is scanned when the agent waits at exit (agent_tick()).
        if (reported_exit_ || (src_ == agent_.get() && !o_.rate)) return;
        try {
            reported_exit_ = true;
            report(true, true);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "perf-prof: kmemleak --user: %s\n", e.what());
        }
        if (probes_ && probes_->options().stop_at_exit) ::kill(tgid_, SIGCONT);
        guard_.reset();
    }

    void interval() override {
        std::lock_guard<std::mutex> g(mu_);
        if (src_ && !reported_exit_) report(false, false);
    }

    void finish() override {
        {
            std::lock_guard<std::mutex> g(mu_);
            if (!reported_exit_) {
                reported_exit_ = true;
                if (src_ == agent_.get() && agent_->exit_waiting())
                    exit_scan();
                else
                    report(false, true);
            }
        }
        // The process goes on without us: nothing recorded, nothing patched left.
        if (agent_) agent_->stop();
        if (link_) link_->detach();
        if (probes_) {
            std::lock_guard<std::mutex> g(mu_);
            // The probes go now: an exit() from here on would stop the process for a scan
            // nobody makes. One that stopped it already (its sample unread), or while the
            // probes were being removed (tens of milliseconds), is continued.
            const bool stops = probes_->options().stop_at_exit;
            const char before = perf::task_state(tgid_);  // a stop of someone else's stays
            const bool stopped = stops && probes_->stats().exit_tid;
            src_ = nullptr;
            probes_.reset();
            // A stop signal sent just before may take a moment to land.
            bool stopped_late = false;
            for (int i = 0; stops && !stopped && before != 'T' && i < 20 && !stopped_late; i++) {
                stopped_late = perf::task_state(tgid_) == 'T';
                if (!stopped_late) ::usleep(1000);
            }
            if (stopped || stopped_late) ::kill(tgid_, SIGCONT);
            guard_.reset();
        }
        if (flame_) flame_->finish();
        if (pprof_) pprof_->finish();
    }

    void sigusr1() override {
        std::lock_guard<std::mutex> g(mu_);
        if (!src_) return;
        src_->poll();
        std::string out;
        AllocList list;
        for (const HeapAlloc& a : src_->allocations()) {
            list.num++;
            list.mem += a.size;
        }
        append_stats(&list, out);
        std::fputs(out.c_str(), ctx_.out());
        std::fflush(ctx_.out());
    }

private:
    // `stop_at_exit`: the leak scan at exit (a sampled profile makes none), only where the
    // session's event is exit()'s uprobe (not after a late fall-back from the agent's path).
    void start_probes(const Allocator& a, bool stop_at_exit) {
        HeapProbeOptions po;
        po.sample_rate = o_.rate;
        po.stop_at_exit = stop_at_exit && !o_.rate;
        // The program stops the process at exit for the scan: if perf-prof dies before it
        // continues it, this guard does. Made first: the files of a dying process are released
        // in reverse order of their descriptors (deferred work, last queued first), so the
        // guard's pipe, below the probes' links, ends (and the guard continues the process) only
        // once the probes are gone; made after them, an exit() during their removal (grace
        // periods, hundreds of milliseconds) stopped the process for good in half the runs.
        if (po.stop_at_exit) guard_ = std::make_unique<ContinueGuard>(tgid_);
        try {
            probes_ = std::make_unique<HeapProbes>(tgid_, a, po);
        } catch (const Error& e) {
            guard_.reset();
            throw ours(e);
        }
        src_ = probes_.get();
    }

    // The agent's thread, after each drain: whether it attached (else the eBPF path takes
    // over), and whether the process waits at exit for the leak scan.
    void agent_tick() noexcept {
        try {
            if (!ready_ || fell_back_ || reported_exit_) return;
            if (!agent_ok_) {
                const uint32_t st = link_->state();
                if (st == PPH_STATE_RECORDING) {
                    agent_ok_ = true;
                } else if (st == PPH_STATE_FAILED || st == PPH_STATE_OFF ||
                           core::monotonic_now_ns() - start_ns_ > kAttachTimeoutNs) {
                    fall_back(st == PPH_STATE_FAILED ? "the agent could not attach: " + link_->error()
                                                     : "the agent did not attach within 3 s");
                }
                return;
            }
            if (o_.rate || !agent_->exit_waiting()) return;
            std::lock_guard<std::mutex> g(mu_);
            if (reported_exit_) return;
            reported_exit_ = true;
            exit_scan();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "perf-prof: kmemleak --user: %s\n", e.what());
        }
    }

    void fall_back(const std::string& why) {
        std::lock_guard<std::mutex> g(mu_);
        fell_back_ = true;
        link_->detach();
        if (o_.probes == HeapProbesKind::Agent) {
            std::fprintf(stderr, "perf-prof: kmemleak --user --probes=agent: %s\n", why.c_str());
            return;
        }
        note_ebpf_fallback("kmemleak --user", why);
        start_probes(find_allocator(tgid_), false);
    }

    // The agent waits at exit: the scan (report() stops the other threads), and the process let
    // go whatever happened.
    void exit_scan() {
        struct Release {
            AgentLink* link;
            ~Release() { link->finish_exit_scan(); }
        } release{link_};
        report(true, true);
    }

    // The process held still for a scan of its memory, on the agent's path. A command of ours
    // is stopped with SIGSTOP (ptrace would make its stops reach the session's waitpid, which
    // reaps the workload), with a guard that continues it if perf-prof dies meanwhile; a
    // process attached to is frozen with ptrace (no signal it can see). Released on destruction.
    struct Hold {
        int pid = -1;
        bool sigstopped = false;
        std::unique_ptr<ContinueGuard> guard;
        std::unique_ptr<Freeze> freeze;
        bool held = false;
        void release() {
            freeze.reset();
            if (sigstopped) ::kill(pid, SIGCONT);
            sigstopped = false;
            guard.reset();
        }
        ~Hold() { release(); }
    };
    void hold(Hold& h) {
        h.pid = tgid_;
        if (launched_) {
            h.guard = std::make_unique<ContinueGuard>(tgid_);
            h.sigstopped = ::kill(tgid_, SIGSTOP) == 0;
            h.held = h.sigstopped && wait_stopped(tgid_);
            return;
        }
        try {
            h.freeze = std::make_unique<Freeze>(tgid_);
            h.held = true;
        } catch (const Error&) {
        }
    }

    // The blocks freed since the attach, for the scan. Under glibc each one's chunk size word
    // (still there, the process stopped) says how much memory the free gave back: the agent
    // gives no size for a block allocated before the attach (left out elsewhere), and a chunk
    // can be larger than the size asked for.
    std::vector<Block> freed_blocks(const ReadMemory& read, bool glibc) {
        std::vector<Block> out = src_->freed();
        std::erase_if(out, [&](Block& b) {
            uint64_t word = 0;
            if (!glibc || !read(b.addr - 8, &word, sizeof(word))) return b.size == 0;
            const uint64_t chunk = word & ~uint64_t(7);
            // Not a chunk of its own mapping (unmapped by the free), and plausible.
            if ((word & 2) || chunk < 32 || (chunk & 15) || chunk > (uint64_t(1) << 40)) return b.size == 0;
            // The whole chunk is free: a block's chunk can be larger than its size asked for
            // (a remainder too small to split off stays with it), and its tail keeps stale words.
            b.size = std::max(b.size, chunk - 8);
            return false;
        });
        return out;
    }

    // The statistics block, and the calls the maps could not hold.
    void append_stats(const AllocList* list, std::string& out) {
        const HeapStats st = src_->stats();
        heap::append_stats(st.total_alloc, st.total_free, list, out);
        if (st.dropped_allocs || st.dropped_stacks)
            out += "DROPPED allocs " + std::to_string(st.dropped_allocs) + " stacks " +
                   std::to_string(st.dropped_stacks) + "\n";
    }

    // Stops the process (at exit the eBPF program has, or the agent waits and the caller froze
    // the rest), scans it for pointers to what is still allocated, prints the leaks and the
    // memory in use by stack, and lets it go on. A sampled profile is not scanned: its in-use
    // bytes are scaled back instead. The final report also feeds --flame-graph and --pprof.
    void report(bool at_exit, bool final) {
        src_->poll();
        bool stopped_here = false, scannable = false;
        Hold held;
        const char st = perf::task_state(tgid_);
        if (o_.rate) {
            // Nothing to scan.
        } else if (src_ == agent_.get()) {
            if (perf::alive_state(st)) {
                hold(held);
                // At exit the thread that waits for us stays put: scannable even unheld.
                scannable = held.held || at_exit;
            }
            src_->poll();  // what the threads did before they stopped
        } else if (perf::alive_state(st)) {
            if (!at_exit && st != 'T' && st != 't') {
                stopped_here = ::kill(tgid_, SIGSTOP) == 0;
            }
            scannable = wait_stopped(tgid_);
        }

        std::vector<HeapAlloc> live = src_->allocations();
        std::sort(live.begin(), live.end(),
                  [](const HeapAlloc& a, const HeapAlloc& b) { return a.ptr < b.ptr; });

        std::vector<bool> reachable;
        if (scannable) {
            std::vector<Block> blocks;
            blocks.reserve(live.size());
            for (const HeapAlloc& a : live) blocks.push_back({a.ptr, a.size});
            const HeapStats st = src_->stats();
            const uint64_t sp = at_exit && st.exit_tid ? st.exit_sp : 0;
            std::vector<Region> roots = process_roots(tgid_, sp);
            if (agent_ && src_ == agent_.get()) roots = without(std::move(roots), agent_->agent_ranges());
            const bool glibc = alloc_.name == "glibc";
            const ReadMemory read = process_memory(tgid_);
            reachable = mark_reachable(blocks, roots, read, freed_blocks(read, glibc),
                                       glibc ? HeapLayout::Glibc : HeapLayout::Plain);
        }
        held.release();
        if (stopped_here) ::kill(tgid_, SIGCONT);

        const uint64_t now = uint64_t(core::monotonic_now_ns());
        std::map<uint64_t, StackTotals> leaked, in_use;
        uint64_t leak_bytes = 0, leak_objects = 0, use_bytes = 0, use_objects = 0;
        for (size_t i = 0; i < live.size(); i++) {
            const HeapAlloc& a = live[i];
            if (o_.than_ns && now - a.time_ns <= o_.than_ns) continue;
            StackTotals& u = in_use[a.stack];
            u.bytes += a.size;
            u.objects++;
            if (scannable && !reachable[i]) {
                StackTotals& l = leaked[a.stack];
                l.bytes += a.size;
                l.objects++;
                leak_bytes += a.size;
                leak_objects++;
            }
        }
        // A sampled profile stands for every allocation: each stack's pair scaled back.
        if (o_.rate)
            for (auto& [key, u] : in_use) {
                const double s = output::heap_sample_scale(u.objects, u.bytes, o_.rate);
                u = {uint64_t(scaled(u.bytes, s)), uint64_t(scaled(u.objects, s))};
            }
        for (const auto& [key, u] : in_use) {
            use_bytes += u.bytes;
            use_objects += u.objects;
        }

        std::string out;
        append_stats(nullptr, out);
        out += "\n";
        auto groups = [&](const std::map<uint64_t, StackTotals>& sums) {
            std::vector<LeakGroup> g;
            g.reserve(sums.size());
            for (const auto& [key, sum] : sums)
                g.push_back({src_->chain(key), sum.bytes, sum.objects, uint32_t(tgid_), {}});
            return g;
        };
        if (o_.rate) {
            if (!said_sampled_)
                out += "LEAKED BYTES REPORT: none: sampled (--rate " + std::to_string(o_.rate) +
                       "), the leak report needs every allocation (run without --rate)\n";
            said_sampled_ = true;
        } else if (scannable) {
            out += "LEAKED BYTES REPORT: " + std::to_string(leak_bytes) + " bytes in " +
                   std::to_string(leak_objects) + " objects (" + alloc_.name + ", pid " +
                   std::to_string(tgid_) + ")\n";
            std::vector<LeakGroup> g = groups(leaked);
            append_leak_groups(g, printer_, false, nullptr, out);
        } else {
            out += "LEAKED BYTES REPORT: unknown: process " + std::to_string(tgid_) +
                   " ended without exit(), its memory could not be scanned\n";
        }
        out += "IN-USE BYTES REPORT: " + std::to_string(use_bytes) + " bytes in " +
               std::to_string(use_objects) + " objects" + (o_.rate ? " (sampled, scaled back)" : "") + "\n";
        std::vector<LeakGroup> g = groups(in_use);
        append_leak_groups(g, printer_, false, nullptr, out, "In use");
        std::fputs(out.c_str(), ctx_.out());
        std::fflush(ctx_.out());

        if (final) record_outputs(o_.rate ? in_use : leaked, in_use);
    }

    // The picture (leaked bytes by stack; sampled: the bytes in use) and the heap profile,
    // from the last report.
    void record_outputs(const std::map<uint64_t, StackTotals>& pictured,
                        const std::map<uint64_t, StackTotals>& in_use) {
        const std::string comm(ctx_.comm(uint32_t(tgid_)));
        if (flame_) {
            std::string folded;
            for (const auto& [key, sum] : pictured) {
                const std::vector<uint64_t>& c = src_->chain(key);
                folded.clear();
                if (!printer_.fold(c.data(), c.size(), uint32_t(tgid_), folded)) continue;
                if (!folded.empty() && folded.back() == ';') folded.pop_back();
                std::string line = comm;
                line += ';';
                line += folded;
                flame_->add(line, sum.bytes);
            }
        }
        if (pprof_) {
            std::map<uint64_t, StackTotals> totals = src_->alloc_totals();
            for (const auto& [k, s] : in_use) totals.try_emplace(k);
            for (const auto& [k, t] : totals) {
                auto u = in_use.find(k);
                // In use is scaled already; what was allocated is scaled here, as serve does.
                const double s = o_.rate ? output::heap_sample_scale(t.objects, t.bytes, o_.rate) : 1.0;
                const int64_t v[4] = {scaled(t.objects, s), scaled(t.bytes, s),
                                      u == in_use.end() ? 0 : int64_t(u->second.objects),
                                      u == in_use.end() ? 0 : int64_t(u->second.bytes)};
                const std::vector<uint64_t>& c = src_->chain(k);
                pprof_->add_values(c.data(), c.size(), uint32_t(tgid_), comm, v);
            }
        }
    }

    Context& ctx_;
    UserHeapOptions o_;
    stack::Printer printer_;
    int tgid_ = -1;
    bool launched_ = false;
    int64_t start_ns_ = 0;
    Allocator alloc_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    std::mutex mu_;              // reports come from the session's thread and the agent's drain thread
    HeapSource* src_ = nullptr;  // probes_ or agent_
    std::unique_ptr<HeapProbes> probes_;
    std::unique_ptr<ContinueGuard> guard_;
    AgentLink* link_ = nullptr;  // agent_'s source
    std::unique_ptr<AgentHeap> agent_;
    std::atomic<bool> ready_{false}, reported_exit_{false}, agent_ok_{false}, fell_back_{false};
    bool said_sampled_ = false;
};

}  // namespace

std::unique_ptr<Profiler> make_user_heap(Context& ctx, const UserHeapOptions& o) {
    return std::make_unique<UserHeap>(ctx, o);
}

}  // namespace perfprof::heap
