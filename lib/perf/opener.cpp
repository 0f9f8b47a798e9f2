#include "perf/opener.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/parse.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "unwind/call_graph.h"

namespace perfprof::perf {

namespace {

std::vector<int> threads_of(int pid) {
    std::vector<int> tids = tasks_of(pid);
    if (tids.empty())
        throw Error("cannot open /proc/" + std::to_string(pid) + "/task: process " + std::to_string(pid) +
                    " does not exist or has exited");
    return tids;
}

void check_thread(int tid) {
    std::error_code ec;
    std::string dir = "/proc/" + std::to_string(tid) + "/task/" + std::to_string(tid);
    if (!std::filesystem::exists(dir, ec))
        throw Error("cannot open " + dir + ": thread " + std::to_string(tid) +
                    " does not exist or has exited");
}

// Makes `fd` write into the ring mapped over `ring_fd` (PERF_EVENT_IOC_SET_OUTPUT).
void set_output(int fd, int ring_fd) {
    if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0)
        throw Error::sys(errno, "cannot share a ring buffer (PERF_EVENT_IOC_SET_OUTPUT)");
}

}  // namespace

// Wake-ups (SPEC §3.2, with batching as our default where SPEC wakes per event).
void set_wakeups(perf_event_attr& a, const EventPlan& plan, const Options& opt, int pages) {
    if (plan.overwrite) {
        a.write_backward = 1;
        a.watermark = 1;
        a.wakeup_watermark = static_cast<uint32_t>(uint64_t(pages) * 4096);
    } else if (opt.watermark) {
        if (*opt.watermark == 0) {
            a.watermark = 0;
            a.wakeup_events = 1;
        } else {
            a.watermark = 1;
            a.wakeup_watermark = static_cast<uint32_t>(uint64_t(pages) * 4096 * *opt.watermark / 100);
        }
    } else if (plan.per_event_wakeup) {
        a.watermark = 0;
        if (!a.wakeup_events) a.wakeup_events = 1;
    } else if (!a.wakeup_watermark) {
        a.watermark = 1;
        a.wakeup_watermark = static_cast<uint32_t>(uint64_t(pages) * 4096 / 2);
    }
}

Opener::Opener(const Options& opt, SessionServices& services, EventClock& clock, NestedResolver nested)
    : opt_(opt), services_(services), clock_(clock), nested_(std::move(nested)) {}

Opener::~Opener() = default;

Device& Opener::open(DeviceSpec top) {
    Device& d = add_device(std::move(top), nullptr);
    open_device(d);
    return d;
}

void Opener::attach(Workload* workload) {
    workload_ = workload;
    // Attach model precedence: -p, -t, workload, CPUs (+cgroups) (SPEC §1.6).
    per_thread_ = true;
    if (!opt_.pids.empty()) {
        for (int pid : core::parse_pid_list(opt_.pids))
            for (int t : threads_of(pid)) tids_.push_back(t);
    } else if (!opt_.tids.empty()) {
        tids_ = core::parse_pid_list(opt_.tids);
        for (int t : tids_) check_thread(t);
    } else if (workload_) {
        tids_ = {workload_->pid()};
    } else {
        per_thread_ = false;
    }
    std::sort(tids_.begin(), tids_.end());
    tids_.erase(std::unique(tids_.begin(), tids_.end()), tids_.end());
    cpus_ =
        online_cpus(opt_.cpus.empty() || per_thread_ ? std::vector<int>{} : core::parse_cpu_list(opt_.cpus));
    if (!per_thread_ && opt_.cgroups_given) cgroups_ = open_cgroups(opt_.cgroups);
}

Device& Opener::add_device(DeviceSpec spec, Device* parent) {
    ProfilerFactory create = std::move(spec.create);
    devices_.push_back(std::make_unique<Device>(services_, std::move(spec), parent));
    Device& d = *devices_.back();
    const Options& opt = d.opt;
    d.profiler = create(d);
    d.plan = d.profiler->plan();
    if (!d.opt.exit_n) d.opt.exit_n = d.plan.exit_n;
    if (d.plan.events.empty() && d.plan.nested.empty()) throw Error(d.name + ": no events to open");
    if (d.plan.follow && !per_thread_)
        throw Error::usage(d.name +
                           ": --ptrace follows the tasks of -p, -t or a command, and none is given (on "
                           "CPUs every task is watched already)");
    auto eval = std::make_unique<PerfEval>(opt);
    if (eval->active()) d.perfeval = std::move(eval);
    // Where the events open: the attached tasks, or whole CPUs when there are none or the
    // profiler watches whole CPUs and selects the tasks by filter (SPEC §4.4.2).
    d.per_thread = per_thread_ && !d.plan.system_wide;
    // The whole program, as perf record follows it: the events of -p's threads and of the
    // command are inherited by every thread and process they create, at any time. A plan that
    // follows tasks itself (--ptrace, task-state) gets its own events on them instead.
    if (d.per_thread && !d.plan.follow && inherits(opt)) {
        d.plan.inherit = true;
        for (EventSpec& e : d.plan.events) e.attr.inherit = 1;
        // A task's events now land in the ring of whichever CPU it ran on, no longer in one
        // ring of its own: merged by time, a task's events stay in their order across its
        // migrations (pairing profilers depend on it, and a printed stream reads in order).
        d.plan.order = true;
    }
    d.ring_per_cpu = !d.per_thread || d.plan.inherit;
    // The kernel refuses to mmap an inherited event that is not bound to a CPU, so with
    // inherit the tasks are watched on every CPU, one ring per CPU (as perf record does).
    d.cpus = !d.ring_per_cpu ? any_cpu() : per_thread_ ? online_cpus() : cpus_;
    d.thread_map = d.per_thread ? thread_map(tids_) : all_threads();
    if (parent && parent->per_thread && !d.per_thread) {
        // Instances are CPUs here and tasks in the parent (SPEC §2.8 rule 2).
        std::printf("%s events are forwarded to %s, reset instance.\n", d.name.c_str(), parent->name.c_str());
    }
    return d;
}

void Opener::open_device(Device& d) {
    const int ncpu = perf_cpu_map__nr(d.cpus.get());
    d.pages = d.opt.mmap_pages.value_or(d.plan.pages);
    // A sample with a user stack copy is the copy's size and more: room for 64 of them, so that
    // a reader late by a few scheduler ticks loses nothing at 1000 Hz.
    for (const EventSpec& spec : d.plan.events)
        if (!d.opt.mmap_pages && unwind::carries_user_stack(spec.attr)) {
            const uint64_t want = 64 * (uint64_t(spec.attr.sample_stack_user) + 512) / 4096;
            while (d.pages > 0 && uint64_t(d.pages) < want) d.pages *= 2;
        }
    d.need_ids = d.plan.events.size() > 1;
    d.evsels.resize(d.plan.events.size());
    d.user_filters.resize(d.plan.events.size());
    for (size_t e = 0; e < d.plan.events.size(); e++) {
        EventSpec& spec = d.plan.events[e];
        perf_event_attr a = spec.attr;
        a.size = sizeof(a);
        a.disabled = 1;
        a.sample_id_all = 1;  // lost records carry a time
        if (d.need_ids) a.sample_type |= PERF_SAMPLE_IDENTIFIER;
        if (!spec.probe.empty()) a.config1 = reinterpret_cast<uintptr_t>(spec.probe.c_str());
        clock_.apply(a);
        set_wakeups(a, d.plan, d.opt, d.pages);
        spec.attr = a;
        if (e == 0) {
            d.sample_type = a.sample_type;
            d.time_off = 8 * (!!(a.sample_type & PERF_SAMPLE_IDENTIFIER) +
                              !!(a.sample_type & PERF_SAMPLE_IP) + !!(a.sample_type & PERF_SAMPLE_TID));
        }

        // cpus= opens the event on the intersection with the device's CPUs; an empty
        // intersection ignores the attribute (SPEC §2.5).
        CpuMap cpus = d.cpus;
        std::vector<int> cpu_index;
        if (d.ring_per_cpu && !spec.cpus.empty()) {
            std::vector<int> keep;
            for (int c = 0; c < ncpu; c++) {
                int cpu = perf_cpu_map__cpu(d.cpus.get(), c).cpu;
                if (std::find(spec.cpus.begin(), spec.cpus.end(), cpu) != spec.cpus.end()) {
                    keep.push_back(cpu);
                    cpu_index.push_back(c);
                }
            }
            if (!keep.empty())
                cpus = online_cpus(keep);
            else
                cpu_index.clear();
        }
        if (cpu_index.empty())
            for (int c = 0; c < ncpu; c++) cpu_index.push_back(c);
        d.evsels[e] = open_event(d, e, cpus, d.thread_map);
        d.cpu_instances.push_back(std::move(cpu_index));
    }
    if (!d.plan.events.empty()) map_rings(d);
    open_nested(d);
}

std::vector<perf_evsel*> Opener::open_event(Device& d, size_t e, const CpuMap& cpus, const ThreadMap& threads,
                                            const std::string* filter, bool newest_leader) {
    const EventSpec& spec = d.plan.events[e];
    const std::string what = event_name(spec);
    std::vector<perf_evsel*> evs;
    std::vector<int> group;
    if (cgroups_.empty() || d.per_thread) {
        perf_evsel* ev = events_.add(spec.attr);
        const int leader = spec.group_leader;
        const size_t k = newest_leader && leader >= 0 && !d.evsels[size_t(leader)].empty()
                             ? d.evsels[size_t(leader)].size() - 1
                             : 0;
        events_.open(ev, cpus, threads, 0, what, group_fds(d, e, k, cpus, threads, group));
        evs.push_back(ev);
    } else {
        for (size_t k = 0; k < cgroups_.size(); k++) {
            const Cgroup& cg = cgroups_[k];
            perf_evsel* ev = events_.add(spec.attr);
            ThreadMap one = thread_map({cg.fd.get()});
            events_.open(ev, cpus, one, PERF_FLAG_PID_CGROUP, what + " in cgroup '" + cg.path + "'",
                         group_fds(d, e, k, cpus, one, group));
            evs.push_back(ev);
        }
    }
    const int ncpu = perf_cpu_map__nr(cpus.get());
    const int nthr = cgroups_.empty() || d.per_thread ? perf_thread_map__nr(threads.get()) : 1;
    for (perf_evsel* ev : evs)
        for (int c = 0; c < ncpu; c++)
            for (int t = 0; t < nthr; t++) {
                const int fd = EventList::fd(ev, c, t);
                install_filter(d, e, fd, filter ? *filter : spec.filter, what);
                if (d.need_ids) {
                    uint64_t id = 0;
                    if (::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
                        throw Error::sys(errno, "PERF_EVENT_IOC_ID");
                    d.ids.emplace(id, int(e));
                }
            }
    return evs;
}

// The group_fd of each (cpu index, thread index) of a member of planned event e's group: the
// leader's fd on the same CPU and thread (of the same cgroup `k`); null for a leader.
const std::vector<int>* Opener::group_fds(Device& d, size_t e, size_t k, const CpuMap& cpus,
                                          const ThreadMap& threads, std::vector<int>& out) {
    const int leader = d.plan.events[e].group_leader;
    if (leader < 0) return nullptr;
    if (size_t(leader) >= e || k >= d.evsels[size_t(leader)].size())
        throw Error(event_name(d.plan.events[e]) + ": its group leader must be an earlier event");
    perf_evsel* lead = d.evsels[size_t(leader)][k];
    const std::vector<int>& lead_idx = d.cpu_instances[size_t(leader)];
    const int ncpu = perf_cpu_map__nr(cpus.get()), nthr = perf_thread_map__nr(threads.get());
    out.assign(size_t(ncpu) * size_t(nthr), -1);
    for (int c = 0; c < ncpu; c++) {
        const int cpu = perf_cpu_map__cpu(cpus.get(), c).cpu;
        int j = 0;  // the leader's cpu index on that CPU (per thread: the one "any CPU" entry)
        while (j < int(lead_idx.size()) && d.ring_per_cpu &&
               perf_cpu_map__cpu(d.cpus.get(), lead_idx[size_t(j)]).cpu != cpu)
            j++;
        if (j == int(lead_idx.size()))
            throw Error(event_name(d.plan.events[e]) + ": CPU " + std::to_string(cpu) + " is not one of " +
                        event_name(d.plan.events[size_t(leader)]) + "'s, its group leader");
        for (int t = 0; t < nthr; t++) out[size_t(c) * size_t(nthr) + size_t(t)] = EventList::fd(lead, j, t);
    }
    return &out;
}

void Opener::install_filter(Device& d, size_t e, int fd, const std::string& text, const std::string& what) {
    EventSpec& spec = d.plan.events[e];
    // Every instance gets the program, or the run stops: never sample unfiltered (SPEC §1.9).
    if (spec.bpf_prog >= 0 && ::ioctl(fd, PERF_EVENT_IOC_SET_BPF, spec.bpf_prog) != 0)
        throw Error::sys(errno, what + ": attaching the eBPF filter (PERF_EVENT_IOC_SET_BPF)");
    if (text.empty() || d.user_filters[e]) return;
    if (::ioctl(fd, PERF_EVENT_IOC_SET_FILTER, text.c_str()) == 0) return;
    const int err = errno;
    if (d.plan.user_filter && !spec.fields.empty()) {
        // The kernel compares fields with constants only; the same expression evaluated per
        // sample here keeps the meaning (SPEC §2.6.2).
        try {
            d.user_filters[e] = std::make_unique<filter::Program>(filter::compile(text, spec.fields));
        } catch (const filter::CompileError& ce) {
            std::fputs(ce.diagnostics().c_str(), stdout);
            std::fflush(stdout);
            throw Error(what + " filter '" + text + "' failed, " + std::strerror(err));
        }
        std::printf("%s filters '%s' in userspace\n", what.c_str(), text.c_str());
        return;
    }
    throw Error(what + " filter '" + text + "' failed, " + std::strerror(err));
}

void Opener::open_nested(Device& parent) {
    for (const NestedSpec& n : parent.plan.nested) {
        if (!nested_) throw Error("profiler " + n.profiler + " cannot be nested in " + parent.name);
        DeviceSpec spec = nested_(n, parent.name);
        // Opened on exactly the parent's CPUs and threads, so instances correspond (SPEC §2.8);
        // the event clock is the session's.
        spec.opt.cpus = parent.opt.cpus;
        spec.opt.pids = parent.opt.pids;
        spec.opt.tids = parent.opt.tids;
        spec.opt.workload.clear();
        Device& child = add_device(std::move(spec), &parent);
        if (!n.cpus.empty())
            for (EventSpec& e : child.plan.events) e.cpus = n.cpus;
        // A nested child wakes in batches unless told otherwise (SPEC §3.2).
        child.plan.per_event_wakeup = false;
        open_device(child);
    }
}

size_t Opener::add_ring(Ring r) {
    const size_t idx = rings_.size();
    r.dev->rings.push_back(idx);
    rings_.push_back(std::move(r));
    return idx;
}

// The first fd of an instance gets the ring mapped over it; the others write into it.
void Opener::join_ring(Ring& r, int fd) {
    if (!r.ring)
        r.ring = std::make_unique<MappedRing>(fd, r.dev->pages, r.dev->plan.overwrite);
    else
        set_output(fd, r.ring->fd());
}

void Opener::map_rings(Device& d) {
    const int nthr = perf_thread_map__nr(d.thread_map.get());
    const int n = d.ring_per_cpu ? perf_cpu_map__nr(d.cpus.get()) : nthr;
    for (int i = 0; i < n; i++) {
        Ring r;
        r.dev = &d;
        r.instance = i;
        if (d.ring_per_cpu)
            r.cpu = perf_cpu_map__cpu(d.cpus.get(), i).cpu;
        else
            r.tid = perf_thread_map__pid(d.thread_map.get(), i);
        // All events of one instance share one ring.
        for (size_t e = 0; e < d.evsels.size(); e++) {
            const std::vector<int>& idx = d.cpu_instances[e];
            int c = 0, t0 = i, t1 = i + 1;
            if (d.ring_per_cpu) {
                auto it = std::find(idx.begin(), idx.end(), i);
                if (it == idx.end()) continue;  // cpus= left this CPU out
                c = int(it - idx.begin());
                t0 = 0;
                t1 = d.per_thread ? nthr : 1;  // inherit: every thread's event on this CPU
            }
            for (perf_evsel* ev : d.evsels[e])
                for (int t = t0; t < t1; t++) join_ring(r, EventList::fd(ev, c, t));
        }
        if (r.ring) add_ring(std::move(r));
    }
}

void Opener::enable_planned() {
    // Last planned first: a group's members before their leader (a leader is always an
    // earlier event). A tracepoint member enabled after its running leader never counts
    // (kernel 6.18).
    for (auto& d : devices_)
        for (size_t e = d->evsels.size(); e-- > 0;)
            if (!d->plan.events[e].start_disabled)
                for (perf_evsel* ev : d->evsels[e]) perf_evsel__enable(ev);
}

void Opener::start_following() {
    const bool wanted =
        std::any_of(devices_.begin(), devices_.end(), [](const auto& d) { return d->plan.follow; });
    if (!wanted) return;
    // The threads of -p are seized together with those they create meanwhile; -t and the
    // workload are seized as given (the workload is still waiting to exec).
    std::vector<int> pids;
    if (!opt_.pids.empty()) pids = core::parse_pid_list(opt_.pids);
    follower_ = std::make_unique<TaskFollower>(pids.empty() ? tids_ : std::vector<int>{}, pids);
    // Threads that appeared between reading /proc and seizing are followed like new ones.
    for (int tid : follower_->tasks())
        if (!std::binary_search(tids_.begin(), tids_.end(), tid)) follow(tid);
}

void Opener::follow(int tid) {
    if (std::binary_search(tids_.begin(), tids_.end(), tid)) return;
    tids_.insert(std::upper_bound(tids_.begin(), tids_.end(), tid), tid);
    for (auto& d : devices_) {
        if (d->closed) continue;
        try {
            if (d->per_thread)
                follow_device(*d, tid);
            else if (d->plan.system_wide)
                follow_filtered(*d, tid);
        } catch (const Error& e) {
            // The task runs on untraced: say so, and keep the others.
            std::fprintf(stderr, "perf-prof: %s: cannot follow new task %d: %s\n", d->name.c_str(), tid,
                         e.what());
        }
    }
}

// A clone of the device's events on one more task (SPEC §3.10), enabled before it runs.
void Opener::follow_device(Device& d, int tid) {
    const ThreadMap one = thread_map({tid});
    std::vector<perf_evsel*> opened;
    for (size_t e = 0; e < d.plan.events.size(); e++)
        for (perf_evsel* ev : open_event(d, e, d.cpus, one, nullptr, true)) {
            d.evsels[e].push_back(ev);
            opened.push_back(ev);
        }
    if (!d.ring_per_cpu) {
        // One more instance: the task's own ring, shared by all its events.
        Ring r;
        r.dev = &d;
        r.instance = int(d.rings.size());
        r.tid = tid;
        for (perf_evsel* ev : opened) join_ring(r, EventList::fd(ev, 0, 0));
        const size_t idx = add_ring(std::move(r));
        if (!d.plan.overwrite && on_new_ring) on_new_ring(idx);
    } else {
        // inherit: the new task's events write into the rings of their CPUs.
        for (perf_evsel* ev : opened) share_cpu_rings(d, ev);
    }
    for (perf_evsel* ev : opened) perf_evsel__enable(ev);
}

// An event opened later on every CPU of the device writes into the device's ring of each CPU.
void Opener::share_cpu_rings(Device& d, perf_evsel* ev) {
    for (int c = 0; c < perf_cpu_map__nr(d.cpus.get()); c++) {
        const int cpu = perf_cpu_map__cpu(d.cpus.get(), c).cpu;
        for (size_t i : d.rings)
            if (rings_[i].cpu == cpu) set_output(EventList::fd(ev, c, 0), rings_[i].ring->fd());
    }
}

// A device on whole CPUs selects the attached tasks by kernel filter. A perf event's filter
// cannot be replaced (the kernel answers EEXIST), so the new task gets events of its own,
// filtered for it, writing into the device's rings.
void Opener::follow_filtered(Device& d, int tid) {
    const std::vector<std::string> filters = d.profiler->filters_for({tid});
    std::vector<perf_evsel*> opened;
    for (size_t e = 0; e < filters.size() && e < d.plan.events.size(); e++) {
        if (filters[e].empty()) continue;
        if (d.opt.verbose > 0)
            std::printf("%s filter \"%s\"\n", event_name(d.plan.events[e]).c_str(), filters[e].c_str());
        for (perf_evsel* ev : open_event(d, e, d.cpus, all_threads(), &filters[e])) {
            d.evsels[e].push_back(ev);
            opened.push_back(ev);
            share_cpu_rings(d, ev);
        }
    }
    for (perf_evsel* ev : opened) perf_evsel__enable(ev);
}

bool Opener::task_exited(int tid) {
    if (workload_ && tid == workload_->pid()) {
        workload_->set_exited();
        return true;
    }
    return follower_ && follower_->alive() == 0;  // every followed task is gone
}

bool Opener::reap() {
    bool over = false;
    if (follower_)
        follower_->poll([this](int tid) { follow(tid); }, [&](int tid) { over |= task_exited(tid); });
    else if (workload_ && workload_->reap())
        over = true;
    return over;
}

// Devices on whole CPUs never see their tasks' rings hang up: look for the tasks instead.
bool Opener::attached_tasks_gone() const {
    if (!per_thread_ || follower_ || workload_) return false;
    if (devices_.empty() || devices_[0]->per_thread) return false;
    return std::none_of(tids_.begin(), tids_.end(), task_alive);
}

}  // namespace perfprof::perf
