#include "heap/user_heap.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <unordered_map>

#include "core/fd.h"
#include "core/time.h"
#include "event/planned_event.h"
#include "heap.skel.h"
#include "heap/allocator.h"
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

// The layout of bpf/heap.bpf.c's map values.
struct BpfAlloc {
    uint64_t size, stack, time;
    uint32_t tid, pad;
};
struct BpfStack {
    uint64_t nr;
    uint64_t ips[127];
};
struct BpfTotals {
    uint64_t bytes, objects;
};

int bpf_program_of(heap_bpf& skel, FnKind k, bpf_program** out) {
    switch (k) {
        case FnKind::Malloc:
            *out = skel.progs.heap_malloc;
            break;
        case FnKind::Calloc:
            *out = skel.progs.heap_calloc;
            break;
        case FnKind::Realloc:
            *out = skel.progs.heap_realloc;
            break;
        case FnKind::Reallocarray:
            *out = skel.progs.heap_reallocarray;
            break;
        case FnKind::Memalign:
            *out = skel.progs.heap_memalign;
            break;
        case FnKind::PosixMemalign:
            *out = skel.progs.heap_posix_memalign;
            break;
        case FnKind::Valloc:
            *out = skel.progs.heap_valloc;
            break;
        case FnKind::Free:
            *out = skel.progs.heap_free;
            return 0;
    }
    return 1;  // has a return probe
}

int tgid_of(int tid) {
    std::ifstream in("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Tgid:", 0) == 0) return std::atoi(line.c_str() + 5);
    return -1;
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
        alloc_ = launched ? find_allocator_for_command(perf::command_path(opt.workload.front()))
                          : find_allocator(tgid_);
        if (!alloc_.exit_offset)
            throw Error("kmemleak --user: no exit() in " + alloc_.path +
                        "'s process: cannot stop it at exit to look for leaks");
        if (opt.flame_graph_given) flame_ = std::make_unique<stack::FlameGraph>(opt.flame_graph, "bytes");
        if (opt.pprof_given) {
            stack::PprofStacks::Kind k;
            k.values = {{"alloc_objects", "count"},
                        {"alloc_space", "bytes"},
                        {"inuse_objects", "count"},
                        {"inuse_space", "bytes"}};
            k.period_type = {"space", "bytes"};
            pprof_ = std::make_unique<stack::PprofStacks>(opt.pprof, printer_, k);
        }
        load_and_attach();
    }

    ~UserHeap() override {
        for (bpf_link* l : links_) bpf_link__destroy(l);
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
        for_each_alloc([&](uint64_t, const BpfAlloc& a) {
            list.num++;
            list.mem += a.size;
        });
        append_stats(&list, out);
        std::fputs(out.c_str(), ctx_.out());
        std::fflush(ctx_.out());
    }

private:
    void load_and_attach() {
        skel_.reset(heap_bpf::open());
        if (!skel_) throw Error::sys(errno, "kmemleak --user: cannot open the eBPF program");
        skel_->rodata->target_tgid = tgid_;
        if (int err = heap_bpf::load(skel_.get()); err)
            throw Error::sys(-err, "kmemleak --user: cannot load the eBPF program",
                             "eBPF needs root (or CAP_BPF and CAP_PERFMON) and a kernel with BTF");
        auto attach = [&](bpf_program* prog, bool ret, const std::string& path, uint64_t off,
                          const std::string& fn) {
            bpf_link* l = bpf_program__attach_uprobe(prog, ret, tgid_, path.c_str(), size_t(off));
            if (!l)
                throw Error::sys(
                    errno, "kmemleak --user: cannot probe " + fn + (ret ? " (return)" : "") + " in " + path);
            links_.push_back(l);
        };
        for (const Probe& p : alloc_.probes) {
            bpf_program* prog = nullptr;
            const bool has_return = bpf_program_of(*skel_, p.kind, &prog);
            attach(prog, false, alloc_.path, p.offset, p.function);
            if (has_return) attach(skel_->progs.heap_return, true, alloc_.path, p.offset, p.function);
        }
        attach(skel_->progs.heap_exit, false, alloc_.exit_path, alloc_.exit_offset, "exit");
    }

    // fn(key, value) for every entry of a map keyed by u64.
    template <class V, class F>
    static void for_each_entry(bpf_map* map, F&& fn) {
        const int fd = bpf_map__fd(map);
        uint64_t key = 0, next = 0;
        const void* prev = nullptr;
        V v;
        while (bpf_map_get_next_key(fd, prev, &next) == 0) {
            key = next;
            prev = &key;
            if (bpf_map_lookup_elem(fd, &key, &v) == 0) fn(key, v);
        }
    }
    template <class F>
    void for_each_alloc(F&& fn) {
        for_each_entry<BpfAlloc>(skel_->maps.allocs, fn);
    }

    // The user call chain of a stack key, as the kernel would give it in a sample.
    const std::vector<uint64_t>& chain_of(uint64_t key) {
        auto [it, fresh] = chains_.try_emplace(key);
        if (fresh) {
            it->second.push_back(PERF_CONTEXT_USER);
            BpfStack st;
            if (key && bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stacks), &key, &st) == 0)
                for (uint64_t i = 0; i < st.nr && i < 127; i++) it->second.push_back(st.ips[i]);
        }
        return it->second;
    }

    // The statistics block, and the calls the maps could not hold.
    void append_stats(const AllocList* list, std::string& out) {
        heap::append_stats(skel_->bss->total_alloc, skel_->bss->total_free, list, out);
        if (skel_->bss->dropped_allocs || skel_->bss->dropped_stacks)
            out += "DROPPED allocs " + std::to_string(skel_->bss->dropped_allocs) + " stacks " +
                   std::to_string(skel_->bss->dropped_stacks) + "\n";
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

        std::vector<std::pair<uint64_t, BpfAlloc>> live;
        for_each_alloc([&](uint64_t ptr, const BpfAlloc& a) { live.emplace_back(ptr, a); });
        std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

        std::vector<bool> reachable;
        if (scannable) {
            std::vector<Block> blocks;
            blocks.reserve(live.size());
            for (const auto& [ptr, a] : live) blocks.push_back({ptr, a.size});
            const uint64_t sp = at_exit && skel_->bss->exit_tid ? skel_->bss->exit_sp : 0;
            std::vector<Block> free_memory;
            for_each_entry<uint64_t>(skel_->maps.freed, [&](uint64_t ptr, uint64_t size) {
                free_memory.push_back({ptr, size});
            });
            reachable = mark_reachable(blocks, process_roots(tgid_, sp), process_memory(tgid_),
                                       std::move(free_memory));
        }

        const uint64_t now = uint64_t(core::monotonic_now_ns());
        struct Sum {
            uint64_t bytes = 0, objects = 0;
        };
        std::map<uint64_t, Sum> leaked, in_use;
        uint64_t leak_bytes = 0, leak_objects = 0, use_bytes = 0, use_objects = 0;
        for (size_t i = 0; i < live.size(); i++) {
            const BpfAlloc& a = live[i].second;
            if (o_.than_ns && now - a.time <= o_.than_ns) continue;
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
                g.push_back({chain_of(key), sum.bytes, sum.objects, uint32_t(tgid_), {}});
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
                const std::vector<uint64_t>& c = chain_of(key);
                folded.clear();
                if (!printer_.fold(c.data(), c.size(), uint32_t(tgid_), folded)) continue;
                if (!folded.empty() && folded.back() == ';') folded.pop_back();
                flame_->add(comm + ";" + folded, sum.bytes);
            }
        }
        if (pprof_) {
            std::map<uint64_t, BpfTotals> totals;
            for_each_entry<BpfTotals>(skel_->maps.stack_totals,
                                      [&](uint64_t k, const BpfTotals& t) { totals[k] = t; });
            for (const auto& [k, s] : in_use) totals.try_emplace(k);
            for (const auto& [k, t] : totals) {
                auto u = in_use.find(k);
                const int64_t v[4] = {int64_t(t.objects), int64_t(t.bytes),
                                      u == in_use.end() ? 0 : int64_t(u->second.objects),
                                      u == in_use.end() ? 0 : int64_t(u->second.bytes)};
                const std::vector<uint64_t>& c = chain_of(k);
                pprof_->add_values(c.data(), c.size(), uint32_t(tgid_), comm, v);
            }
        }
    }

    Context& ctx_;
    UserHeapOptions o_;
    stack::Printer printer_;
    int tgid_ = -1;
    Allocator alloc_;
    core::CPtr<heap_bpf, &heap_bpf::destroy> skel_;
    std::vector<bpf_link*> links_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> chains_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    bool reported_exit_ = false;
};

}  // namespace

std::unique_ptr<Profiler> make_user_heap(Context& ctx, const UserHeapOptions& o) {
    return std::make_unique<UserHeap>(ctx, o);
}

}  // namespace perfprof::heap
