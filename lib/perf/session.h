// The session: opens a profiler's planned events on CPUs, threads, cgroups or a workload,
// maps one ring per instance, and runs the epoll loop until a signal, -N, or the end of
// every attached task (SPEC §1.6, §1.11, §3).
#pragma once

#include <sys/epoll.h>

#include <memory>
#include <string>
#include <vector>

#include "core/fd.h"
#include "core/time.h"
#include "perf-prof/options.h"
#include "perf-prof/profiler.h"
#include "perf/cgroup.h"
#include "perf/clock_sync.h"
#include "perf/comm_table.h"
#include "perf/event_list.h"
#include "perf/ring.h"
#include "perf/workload.h"
#include "tep/tep.h"

namespace perfprof::perf {

class Session final : public Context {
public:
    Session(const Options& opt, const ProfilerInfo& info);
    ~Session() override;

    // Runs to the end; returns the exit status. Throws Error for setup failures.
    int run();

    // Context
    const Options& options() const override { return opt_; }
    tep::Tep& tep() override;
    std::string_view comm(uint32_t tid) override;
    std::string wall(uint64_t perf_time) override;
    FILE* out() override { return stdout; }

private:
    struct Instance {
        int cpu = -1;  // per-CPU ring
        int tid = -1;  // per-thread ring
        std::unique_ptr<MappedRing> ring;
        uint64_t lost = 0;
        uint64_t last_time = 0;
        bool hup = false;
    };
    struct EventIds {
        uint64_t id;
        int event;
    };

    void redirect_output();
    void setup_signals();
    void open_events();
    void map_rings();
    void enable();
    void loop();
    void finish();

    void drain(Instance& in);
    void drain_all();
    void record(Instance& in, const perf_event_header& h);
    void tick();
    void housekeeping();
    void report_lost();
    void usage_self();
    void dump_state();
    void on_signal();
    void on_stdin();
    void add_fd(int fd, uint64_t tag, uint32_t events = EPOLLIN);
    int event_of(uint64_t id) const;

    Options opt_;
    const ProfilerInfo& info_;
    std::unique_ptr<Workload> workload_;
    std::unique_ptr<tep::Tep> tep_;
    std::unique_ptr<CommTable> comms_;
    std::unique_ptr<ClockSync> clock_sync_;
    core::WallClock clock_;
    std::unique_ptr<Profiler> profiler_;
    EventPlan plan_;
    EventList events_;
    std::vector<Cgroup> cgroups_;
    std::vector<std::vector<perf_evsel*>> evsels_;  // per planned event: its evsels (x cgroups)
    std::vector<EventIds> ids_;                     // sample id -> planned event
    bool need_ids_ = false;
    std::vector<Instance> instances_;
    int pages_ = 0;

    core::Fd epoll_, signal_fd_, interval_fd_, usage_fd_, house_fd_;
    bool stdin_open_ = false;
    std::string stdin_buf_;
    bool stopping_ = false;
    uint64_t samples_ = 0;
    uint64_t cutoff_ = 0;        // samples before this perf time predate the atomic enable
    uint64_t lost_pending_ = 0;  // not yet reported
    uint64_t lost_total_ = 0;
    unsigned house_ticks_ = 0;
    int64_t usage_wall_ = 0, usage_utime_ = 0, usage_stime_ = 0;
    std::string line_;
};

}  // namespace perfprof::perf
