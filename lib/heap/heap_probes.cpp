#include "heap/heap_probes.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <string>

#include "core/fd.h"
#include "heap.skel.h"
#include "perf-prof/error.h"
#include "tep/tracefs.h"

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

// The entry program of an allocator function; true when it has a return probe too.
bool bpf_program_of(heap_bpf& skel, FnKind k, bpf_program** out) {
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
            return false;
    }
    return true;
}

// fn(key, value) for every entry of a map keyed by u64.
template <class V, class F>
void for_each_entry(const bpf_map* map, F&& fn) {
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

std::map<uint64_t, StackTotals> totals_of(const bpf_map* map) {
    std::map<uint64_t, StackTotals> out;
    for_each_entry<BpfTotals>(map, [&](uint64_t k, const BpfTotals& t) { out[k] = {t.bytes, t.objects}; });
    return out;
}

// A uprobe_multi link (linux 6.6): one link puts a program on many offsets of a file, for a
// process (its thread group) as a whole. One link per program instead of a perf uprobe per
// function and return: the removal of each waits for a grace period, and 22 of them kept
// perf-prof's exit (and the exit probe) around for seconds. libbpf 1.1 and the system's
// headers predate it: the attribute is laid out here, as linux/bpf.h has it.
constexpr auto kTraceUprobeMulti = bpf_attach_type(48);  // BPF_TRACE_UPROBE_MULTI
constexpr uint32_t kUprobeMultiReturn = 1;               // BPF_F_UPROBE_MULTI_RETURN

core::Fd uprobe_multi_link(bpf_program* prog, bool ret, int tgid, const std::string& path,
                           const std::vector<uint64_t>& offsets) {
    struct Attr {
        uint32_t prog_fd, target_fd, attach_type, flags;
        uint64_t path, offsets, ref_ctr_offsets, cookies;
        uint32_t cnt, multi_flags, pid;
    } a{};
    a.prog_fd = uint32_t(bpf_program__fd(prog));
    a.attach_type = kTraceUprobeMulti;
    a.path = uint64_t(uintptr_t(path.c_str()));
    a.offsets = uint64_t(uintptr_t(offsets.data()));
    a.cnt = uint32_t(offsets.size());
    a.multi_flags = ret ? kUprobeMultiReturn : 0;
    a.pid = uint32_t(tgid);
    alignas(8) unsigned char attr[144] = {};  // the rest of union bpf_attr: zero
    static_assert(sizeof(Attr) <= sizeof(attr));
    std::memcpy(attr, &a, sizeof a);
    return core::Fd(int(::syscall(__NR_bpf, BPF_LINK_CREATE, attr, sizeof attr)));
}

}  // namespace

struct HeapProbes::Impl {
    // Declared first, destroyed last: the links go before the programs they hold.
    core::CPtr<heap_bpf, &heap_bpf::destroy> skel;
    // Either uprobe_multi links (descriptors) or classic ones (libbpf's).
    core::Fd exit_fd;
    core::CPtr<bpf_link, &bpf_link__destroy> exit_link;  // attached first, removed first
    std::vector<core::Fd> fds;
    std::vector<core::CPtr<bpf_link, &bpf_link__destroy>> links;

    void open(int tgid, const Allocator& alloc, const HeapProbeOptions& o, bool multi);
    void attach_multi(int tgid, const Allocator& alloc, const HeapProbeOptions& o);
    void attach_classic(int tgid, const Allocator& alloc, const HeapProbeOptions& o);
};

// Opens and loads the program; `multi`: its uprobe programs for uprobe_multi links.
void HeapProbes::Impl::open(int tgid, const Allocator& alloc, const HeapProbeOptions& o, bool multi) {
    skel.reset(heap_bpf::open());
    heap_bpf* sk = skel.get();
    if (!sk) throw Error::sys(errno, "cannot open the eBPF program");
    sk->rodata->target_tgid = tgid;
    sk->rodata->sample_rate = o.sample_rate;
    sk->rodata->keep_freed = o.stop_at_exit;  // only the scan at exit reads them
    sk->rodata->glibc_chunks = alloc.name == "glibc";
    if (o.sample_rate) {
        const std::vector<uint64_t> gaps = sample_gap_quantiles(o.sample_rate);
        static_assert(sizeof(sk->rodata->sample_gaps) / sizeof(uint64_t) == kSampleQuantiles);
        std::copy(gaps.begin(), gaps.end(), sk->rodata->sample_gaps);
    }
    if (!o.growth) {
        // Not even loaded: kmemleak runs where syscall tracepoints may not be.
        bpf_program__set_autoload(sk->progs.heap_brk, false);
        bpf_program__set_autoload(sk->progs.heap_mmap, false);
    }
    if (multi)
        for (bpf_program* p :
             {sk->progs.heap_malloc, sk->progs.heap_calloc, sk->progs.heap_realloc,
              sk->progs.heap_reallocarray, sk->progs.heap_memalign, sk->progs.heap_posix_memalign,
              sk->progs.heap_valloc, sk->progs.heap_free, sk->progs.heap_return, sk->progs.heap_exit})
            bpf_program__set_expected_attach_type(p, kTraceUprobeMulti);
    if (int err = heap_bpf::load(sk); err)
        throw Error::sys(-err, "cannot load the eBPF program",
                         "eBPF needs root (or CAP_BPF and CAP_PERFMON) and a kernel with BTF");
}

// One link per program, on all its functions. Throws Error with errno set when the kernel
// has no uprobe_multi links.
void HeapProbes::Impl::attach_multi(int tgid, const Allocator& alloc, const HeapProbeOptions& o) {
    heap_bpf* sk = skel.get();
    auto link = [&](bpf_program* prog, bool ret, const std::string& path, const std::vector<uint64_t>& offs) {
        core::Fd fd = uprobe_multi_link(prog, ret, tgid, path, offs);
        if (!fd) throw Error::sys(errno, "cannot probe the allocator in " + path);
        return fd;
    };
    // exit() first: its link gets the lowest descriptor, the first the kernel closes (and so
    // removes) when perf-prof dies without running the destructor. The program leaves the
    // process alone until stop_armed is set.
    if (o.stop_at_exit) exit_fd = link(sk->progs.heap_exit, false, alloc.exit_path, {alloc.exit_offset});
    std::vector<std::pair<bpf_program*, std::vector<uint64_t>>> entries;
    std::vector<uint64_t> returns;
    for (const Probe& p : alloc.probes) {
        bpf_program* prog = nullptr;
        if (bpf_program_of(*sk, p.kind, &prog)) returns.push_back(p.offset);
        auto it =
            std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == prog; });
        if (it == entries.end()) it = entries.insert(entries.end(), {prog, {}});
        it->second.push_back(p.offset);
    }
    for (const auto& [prog, offs] : entries) fds.push_back(link(prog, false, alloc.path, offs));
    if (!returns.empty()) fds.push_back(link(sk->progs.heap_return, true, alloc.path, returns));
}

// A perf uprobe per function and return, for the process: kernels without uprobe_multi.
void HeapProbes::Impl::attach_classic(int tgid, const Allocator& alloc, const HeapProbeOptions& o) {
    heap_bpf* sk = skel.get();
    auto attach = [&](bpf_program* prog, bool ret, const std::string& path, uint64_t off,
                      const std::string& fn) {
        bpf_link* l = bpf_program__attach_uprobe(prog, ret, tgid, path.c_str(), size_t(off));
        if (!l) throw Error::sys(errno, "cannot probe " + fn + (ret ? " (return)" : "") + " in " + path);
        return l;
    };
    if (o.stop_at_exit)
        exit_link.reset(attach(sk->progs.heap_exit, false, alloc.exit_path, alloc.exit_offset, "exit"));
    for (const Probe& p : alloc.probes) {
        bpf_program* prog = nullptr;
        const bool has_return = bpf_program_of(*sk, p.kind, &prog);
        links.emplace_back(attach(prog, false, alloc.path, p.offset, p.function));
        if (has_return)
            links.emplace_back(attach(sk->progs.heap_return, true, alloc.path, p.offset, p.function));
    }
}

HeapProbes::HeapProbes(int tgid, const Allocator& alloc, const HeapProbeOptions& o)
    : tgid_(tgid), o_(o), impl_(std::make_unique<Impl>()) {
    if (o.stop_at_exit && !alloc.exit_offset)
        throw Error("no exit() in " + alloc.path + "'s process: cannot stop it at exit");
    bool multi = true;
    try {
        impl_->open(tgid, alloc, o, true);
        impl_->attach_multi(tgid, alloc, o);
    } catch (const Error&) {
        // No uprobe_multi in this kernel: the classic links.
        multi = false;
        impl_->fds.clear();
        impl_->exit_fd.reset();
        impl_->skel.reset();
    }
    if (!multi) {
        impl_->open(tgid, alloc, o, false);
        impl_->attach_classic(tgid, alloc, o);
    }
    heap_bpf* skel = impl_->skel.get();
    if (o.growth) {
        tep::tracefs_dir();  // libbpf finds the tracepoints' ids there: mounted if it was not
        for (auto [prog, name] : {std::pair{skel->progs.heap_brk, "sys_exit_brk"},
                                  std::pair{skel->progs.heap_mmap, "sys_enter_mmap"}}) {
            bpf_link* l = bpf_program__attach_tracepoint(prog, "syscalls", name);
            if (!l) throw Error::sys(errno, std::string("cannot attach to the tracepoint syscalls:") + name);
            impl_->links.emplace_back(l);
        }
    }
    if (o.stop_at_exit) __atomic_store_n(&skel->bss->stop_armed, 1, __ATOMIC_SEQ_CST);
}

// The exit stop must not outlive us: a process stopped at exit() after the last scan (perf-prof
// interrupted before it read the stop's sample, or the process exiting while perf-prof ends) is
// continued here, and none is stopped any more once the program is disarmed. Removing a uprobe
// waits for a grace period, about 50 ms to a second on a loaded machine, and there are two per
// allocator function: the exit probe is disarmed at once and removed first.
HeapProbes::~HeapProbes() {
    if (!impl_->skel) return;
    heap_bpf* skel = impl_->skel.get();
    __atomic_store_n(&skel->bss->stop_armed, 0, __ATOMIC_SEQ_CST);
    impl_->exit_fd.reset();  // returns once no handler runs: any stop it sent is queued
    impl_->exit_link.reset();
    const bool stopped = __atomic_load_n(&skel->bss->exit_stops, __ATOMIC_SEQ_CST) != 0;
    // SIGCONT also discards a stop still pending. The process is at its exit(): it only ends.
    if (stopped) ::kill(tgid_, SIGCONT);
    impl_->fds.clear();
    while (!impl_->links.empty()) impl_->links.pop_back();
}

std::vector<HeapAlloc> HeapProbes::allocations() const {
    std::vector<HeapAlloc> out;
    for_each_entry<BpfAlloc>(impl_->skel->maps.allocs, [&](uint64_t ptr, const BpfAlloc& a) {
        out.push_back({ptr, a.size, a.stack, a.time, a.tid});
    });
    return out;
}

std::map<uint64_t, StackTotals> HeapProbes::alloc_totals() const {
    return totals_of(impl_->skel->maps.stack_totals);
}

std::map<uint64_t, StackTotals> HeapProbes::growth_totals() const {
    if (!o_.growth) return {};
    return totals_of(impl_->skel->maps.growth_totals);
}

std::vector<Block> HeapProbes::freed() const {
    std::vector<Block> out;
    for_each_entry<uint64_t>(impl_->skel->maps.freed, [&](uint64_t ptr, uint64_t size) {
        out.push_back({ptr, size});
    });
    return out;
}

const std::vector<uint64_t>& HeapProbes::chain(uint64_t stack) {
    auto [it, fresh] = chains_.try_emplace(stack);
    if (fresh) {
        it->second.push_back(PERF_CONTEXT_USER);
        BpfStack st;
        if (stack && bpf_map_lookup_elem(bpf_map__fd(impl_->skel->maps.stacks), &stack, &st) == 0)
            for (uint64_t i = 0; i < st.nr && i < 127; i++) it->second.push_back(st.ips[i]);
    }
    return it->second;
}

HeapStats HeapProbes::stats() const {
    const auto* bss = impl_->skel->bss;
    HeapStats s;
    s.total_alloc = bss->total_alloc;
    s.total_free = bss->total_free;
    s.dropped_allocs = bss->dropped_allocs;
    s.dropped_stacks = bss->dropped_stacks;
    s.exit_sp = bss->exit_sp;
    s.exit_tid = bss->exit_tid;
    return s;
}

}  // namespace perfprof::heap
