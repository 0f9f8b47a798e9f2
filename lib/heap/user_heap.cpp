#include "heap/user_heap.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "core/time.h"
#include "event/planned_event.h"
#include "heap/allocator.h"
#include "heap/heap_probes.h"
#include "heap/leak_report.h"
#include "heap/reachability.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "perf/workload.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::heap {

namespace {

int tgid_of(int tid) {
    std::ifstream in("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Tgid:", 0) == 0) return std::atoi(line.c_str() + 5);
    return -1;
}

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

class UserHeap final : public Profiler {
public:
    UserHeap(Context& ctx, const UserHeapOptions& o) : ctx_(ctx), o_(o), printer_(false, true) {
        const Options& opt = ctx.options();
        if (ctx.threads().empty())
            throw Error::usage("kmemleak --user: profiles a process: give -p PID or a command after --");
        tgid_ = tgid_of(ctx.threads().front());
        if (tgid_ <= 0) throw Error("kmemleak --user: no process " + std::to_string(ctx.threads().front()));
        for (int t : ctx.threads())
            if (tgid_of(t) != tgid_)
                throw Error::usage("kmemleak --user: profiles one process; -p/-t name threads of several");
        const bool launched = opt.pids.empty() && opt.tids.empty() && !opt.workload.empty();
        try {
            alloc_ = launched ? find_allocator_for_command(perf::command_path(opt.workload.front()))
                              : find_allocator(tgid_);
        } catch (const Error& e) {
            throw ours(e);
        }
        if (!alloc_.exit_offset)
            throw Error("kmemleak --user: no exit() in " + alloc_.path +
                        "'s process: cannot stop it at exit to look for leaks");
        if (opt.flame_graph_given) flame_ = std::make_unique<stack::FlameGraph>(opt.flame_graph, "bytes");
        if (opt.pprof_given) {
            pprof_ =
                std::make_unique<stack::PprofStacks>(opt.pprof, printer_, stack::PprofStacks::Kind::heap());
        }
        try {
            probes_ = std::make_unique<HeapProbes>(tgid_, alloc_, HeapProbeOptions{.stop_at_exit = true});
        } catch (const Error& e) {
            throw ours(e);
        }
    }

    EventPlan plan() override {
        // The session's one event: exit() of the process. The eBPF program on the same probe
        // has stopped the process by the time this sample is read.
        std::string text = "uprobe:exit@\"" + alloc_.exit_path + "\"";
        std::vector<event::Resolved> rs = event::resolve_event_list(text, ctx_.tep(), 0);
        EventPlan p;
        for (const event::Resolved& r : rs) p.events.push_back(event::planned_event(r, false, false, false));
        p.inherit = true;  // threads created later call exit() too
        p.pages = 1;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (int(s.pid) != tgid_ || reported_exit_) return;
        try {
            reported_exit_ = true;
            report(true, true);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "perf-prof: kmemleak --user: %s\n", e.what());
        }
        ::kill(tgid_, SIGCONT);
    }

    void interval() override {
        if (!reported_exit_) report(false, false);
    }

    void finish() override {
        if (!reported_exit_) {
            reported_exit_ = true;
            report(false, true);
        }
        if (flame_) flame_->finish();
        if (pprof_) pprof_->finish();
    }

    void sigusr1() override {
        std::string out;
        AllocList list;
        for (const HeapAlloc& a : probes_->allocations()) {
            list.num++;
            list.mem += a.size;
        }
        append_stats(&list, out);
        std::fputs(out.c_str(), ctx_.out());
        std::fflush(ctx_.out());
    }

private:
    // The statistics block, and the calls the maps could not hold.
    void append_stats(const AllocList* list, std::string& out) {
        const HeapStats st = probes_->stats();
        heap::append_stats(st.total_alloc, st.total_free, list, out);
        if (st.dropped_allocs || st.dropped_stacks)
            out += "DROPPED allocs " + std::to_string(st.dropped_allocs) + " stacks " +
                   std::to_string(st.dropped_stacks) + "\n";
    }

    // Stops the process (at exit the eBPF program has), scans it for pointers to what is
    // still allocated, prints the leaks and the memory in use by stack, and continues it.
    // The final report also feeds --flame-graph and --pprof.
    void report(bool at_exit, bool final) {
        bool stopped_here = false, scannable = false;
        const char st = perf::task_state(tgid_);
        if (perf::alive_state(st)) {
            if (!at_exit && st != 'T' && st != 't') {
                stopped_here = ::kill(tgid_, SIGSTOP) == 0;
            }
            scannable = wait_stopped(tgid_);
        }

        std::vector<HeapAlloc> live = probes_->allocations();
        std::sort(live.begin(), live.end(),
                  [](const HeapAlloc& a, const HeapAlloc& b) { return a.ptr < b.ptr; });

        std::vector<bool> reachable;
        if (scannable) {
            std::vector<Block> blocks;
            blocks.reserve(live.size());
            for (const HeapAlloc& a : live) blocks.push_back({a.ptr, a.size});
            const HeapStats st = probes_->stats();
            const uint64_t sp = at_exit && st.exit_tid ? st.exit_sp : 0;
            reachable =
                mark_reachable(blocks, process_roots(tgid_, sp), process_memory(tgid_), probes_->freed());
        }

        const uint64_t now = uint64_t(core::monotonic_now_ns());
        struct Sum {
            uint64_t bytes = 0, objects = 0;
        };
        std::map<uint64_t, Sum> leaked, in_use;
        uint64_t leak_bytes = 0, leak_objects = 0, use_bytes = 0, use_objects = 0;
        for (size_t i = 0; i < live.size(); i++) {
            const HeapAlloc& a = live[i];
            if (o_.than_ns && now - a.time_ns <= o_.than_ns) continue;
            Sum& u = in_use[a.stack];
            u.bytes += a.size;
            u.objects++;
            use_bytes += a.size;
            use_objects++;
            if (scannable && !reachable[i]) {
                Sum& l = leaked[a.stack];
                l.bytes += a.size;
                l.objects++;
                leak_bytes += a.size;
                leak_objects++;
            }
        }

        std::string out;
        append_stats(nullptr, out);
        out += "\n";
        auto groups = [&](const std::map<uint64_t, Sum>& sums) {
            std::vector<LeakGroup> g;
            for (const auto& [key, sum] : sums)
                g.push_back({probes_->chain(key), sum.bytes, sum.objects, uint32_t(tgid_), {}});
            return g;
        };
        if (scannable) {
            out += "LEAKED BYTES REPORT: " + std::to_string(leak_bytes) + " bytes in " +
                   std::to_string(leak_objects) + " objects (" + alloc_.name + ", pid " +
                   std::to_string(tgid_) + ")\n";
            std::vector<LeakGroup> g = groups(leaked);
            append_leak_groups(g, printer_, 127, false, nullptr, out);
        } else {
            out += "LEAKED BYTES REPORT: unknown: process " + std::to_string(tgid_) +
                   " ended without exit(), its memory could not be scanned\n";
        }
        out += "IN-USE BYTES REPORT: " + std::to_string(use_bytes) + " bytes in " +
               std::to_string(use_objects) + " objects\n";
        std::vector<LeakGroup> g = groups(in_use);
        append_leak_groups(g, printer_, 127, false, nullptr, out, "In use");
        std::fputs(out.c_str(), ctx_.out());
        std::fflush(ctx_.out());

        if (final) record_outputs(leaked, in_use);
        if (stopped_here) ::kill(tgid_, SIGCONT);
    }

    // The picture (leaked bytes by stack) and the heap profile, from the last report.
    template <class Sums>
    void record_outputs(const Sums& leaked, const Sums& in_use) {
        const std::string comm(ctx_.comm(uint32_t(tgid_)));
        if (flame_) {
            std::string folded;
            for (const auto& [key, sum] : leaked) {
                const std::vector<uint64_t>& c = probes_->chain(key);
                folded.clear();
                if (!printer_.fold(c.data(), c.size(), uint32_t(tgid_), folded)) continue;
                if (!folded.empty() && folded.back() == ';') folded.pop_back();
                flame_->add(comm + ";" + folded, sum.bytes);
            }
        }
        if (pprof_) {
            std::map<uint64_t, StackTotals> totals = probes_->alloc_totals();
            for (const auto& [k, s] : in_use) totals.try_emplace(k);
            for (const auto& [k, t] : totals) {
                auto u = in_use.find(k);
                const int64_t v[4] = {int64_t(t.objects), int64_t(t.bytes),
                                      u == in_use.end() ? 0 : int64_t(u->second.objects),
                                      u == in_use.end() ? 0 : int64_t(u->second.bytes)};
                const std::vector<uint64_t>& c = probes_->chain(k);
                pprof_->add_values(c.data(), c.size(), uint32_t(tgid_), comm, v);
            }
        }
    }

    Context& ctx_;
    UserHeapOptions o_;
    stack::Printer printer_;
    int tgid_ = -1;
    Allocator alloc_;
    std::unique_ptr<HeapProbes> probes_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    bool reported_exit_ = false;
};

}  // namespace

std::unique_ptr<Profiler> make_user_heap(Context& ctx, const UserHeapOptions& o) {
    return std::make_unique<UserHeap>(ctx, o);
}

}  // namespace perfprof::heap
