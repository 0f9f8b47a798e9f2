// The session: opens a profiler's planned events on CPUs, threads, cgroups or a workload,
// maps one ring per instance, and runs the epoll loop until a signal, -N, or the end of
// every attached task (SPEC §1.6, §1.11, §3). Profilers named inside an event list (SPEC
// §2.8) become child devices on the same CPUs and threads whose samples are forwarded to
// the parent; with ordering, every ring of every device feeds one Orderer (SPEC §3.4).
// With --ptrace (SPEC §3.10) tasks created later are followed (session_open.cpp).
#pragma once

#include <sys/epoll.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/fd.h"
#include "core/time.h"
#include "filter/expr.h"
#include "perf-prof/options.h"
#include "perf-prof/profiler.h"
#include "perf/cgroup.h"
#include "perf/comm_table.h"
#include "perf/event_clock.h"
#include "perf/event_list.h"
#include "perf/orderer.h"
#include "perf/ring.h"
#include "perf/task_follower.h"
#include "perf/workload.h"
#include "sym/symbolizer.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof::perf {

class Session {
public:
    Session(const Options& opt, const ProfilerInfo& info);
    ~Session();

    // Runs to the end; returns the exit status. Throws Error for setup failures.
    int run();

    // Services shared by every device.
    tep::Tep& tep();
    std::string_view comm(uint32_t tid);
    int64_t realtime(uint64_t time) const;  // of an event time as profilers see it
    const filter::EvalHooks* eval_hooks() const { return &hooks_; }

    struct Device;

private:
    struct Ring {
        Device* dev = nullptr;
        int instance = 0;
        int cpu = -1;  // per-CPU ring
        int tid = -1;  // per-thread ring
        std::unique_ptr<MappedRing> ring;
        uint64_t lost = 0;
        uint64_t last_time = 0;
        bool hup = false;
    };

    void redirect_output();
    void setup_signals();
    // session_open.cpp: attaching, opening devices, following new tasks.
    void attach();
    Device& add_device(const ProfilerInfo& info, const Options& opt, Device* parent);
    void open_device(Device& d);
    // `filter` replaces the planned event's filter (the clone for one followed task).
    std::vector<perf_evsel*> open_event(Device& d, size_t e, const CpuMap& cpus, const ThreadMap& threads,
                                        const std::string* filter = nullptr);
    void open_nested(Device& parent);
    void install_filter(Device& d, size_t e, int fd, const std::string& text, const std::string& what);
    void map_rings(Device& d);
    size_t add_ring(Ring r);
    void join_ring(Ring& r, int fd);
    void start_following();
    void follow(int tid);
    void follow_device(Device& d, int tid);
    void follow_filtered(Device& d, int tid);
    void share_cpu_rings(Device& d, perf_evsel* ev);
    void task_exited(int tid);
    bool attached_tasks_gone() const;
    void close_device(Device& d);
    void watch_ring(size_t idx);
    void enable();
    void loop();
    void finish();

    void on_ring(size_t idx, uint32_t events);
    void drain(Ring& r);
    void drain_all();
    void read_overwrite();
    void read_record(Ring& r, const perf_event_header& h);
    void deliver(Ring& r, const perf_event_header& h, uint64_t time);
    void deliver_lost(Ring& r, const LostRange& l);
    void flush_ordered(bool all);
    uint64_t record_time(const Device& d, const perf_event_header& h) const;
    void tick();
    void housekeeping();
    void reap();
    void report_lost(Device& d);
    void usage_self();
    void dump_state();
    void on_signal();
    void on_stdin();
    void add_fd(int fd, uint64_t tag, uint32_t events = EPOLLIN);

    Options opt_;
    const ProfilerInfo& info_;
    // Before the devices: their profilers' outputs hold it until they are destroyed.
    sym::Symbolizer symbols_;
    std::unique_ptr<Workload> workload_;
    std::unique_ptr<tep::Tep> tep_;
    std::unique_ptr<CommTable> comms_;
    std::unique_ptr<EventClock> clock_;
    filter::EvalHooks hooks_;
    std::array<std::string, 8> hook_bufs_;  // comm_get() results, reused round-robin
    unsigned hook_next_ = 0;

    // The attachment every device starts from (SPEC §2.8: children open on the parent's maps);
    // a device may watch whole CPUs instead of the tasks (EventPlan::system_wide).
    CpuMap cpus_;              // -C ∩ online CPUs
    std::vector<int> tids_;    // the attached tasks, ascending; grows as tasks are followed
    bool per_thread_ = false;  // attached to tasks (-p, -t, workload), not to whole CPUs
    std::vector<Cgroup> cgroups_;
    std::unique_ptr<TaskFollower> follower_;  // after workload_: detached before it is ended

    EventList events_;  // every event of every device: enabled and disabled together
    std::vector<std::unique_ptr<Device>> devices_;  // [0] is the top-level profiler
    std::vector<Ring> rings_;
    unwind::SampleUnwinder unwinder_;  // --call-graph dwarf samples
    std::unique_ptr<Orderer> orderer_;
    bool overwrite_ = false;

    core::Fd epoll_, signal_fd_, interval_fd_, usage_fd_, house_fd_, flush_fd_;
    bool stdin_open_ = false;
    std::string stdin_buf_;
    bool stopping_ = false;
    uint64_t cutoff_ = 0;  // samples before this perf time predate the atomic enable
    unsigned house_ticks_ = 0;
    int64_t usage_wall_ = 0, usage_utime_ = 0, usage_stime_ = 0;
};

}  // namespace perfprof::perf
