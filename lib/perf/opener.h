// The opener: where a session's devices attach (SPEC §1.6), opening their events with filters
// and rings (SPEC §3.1, §3.2), nested children (SPEC §2.8, resolved by the caller's
// NestedResolver), and following tasks created later (SPEC §3.10): a per-task device gets its
// events on the new task, a device watching whole CPUs gets its kernel filters widened, both
// before the new task runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "perf/cgroup.h"
#include "perf/device.h"
#include "perf/event_clock.h"
#include "perf/event_list.h"
#include "perf/task_follower.h"
#include "perf/workload.h"

namespace perfprof::perf {

// How an event of `plan` wakes the reader of its ring of `pages` pages (SPEC §3.2): overwrite
// rings when full, --watermark, per event, or batched at half the ring.
void set_wakeups(perf_event_attr& a, const EventPlan& plan, const Options& opt, int pages);

class Opener {
public:
    // `opt`: the session's options (the attachment); `services` become the devices' Context.
    Opener(const Options& opt, SessionServices& services, EventClock& clock, NestedResolver nested);
    ~Opener();

    // The tasks or CPUs every device starts from (-p, -t, the workload, -C, --cgroups).
    void attach(Workload* workload);
    // The top-level device, its events, rings and nested children opened. Throws Error.
    Device& open(DeviceSpec top);
    // Enables every device's events but those planned start_disabled.
    void enable_planned();
    // --ptrace: seizes the attached tasks when a device follows them (before they run on).
    void start_following();
    // SIGCHLD and once a second: new tasks followed, exits noted. True when the run is over
    // (the workload ended, or every followed task).
    bool reap();
    // Devices on whole CPUs never see their tasks' rings hang up: true when the tasks are gone.
    bool attached_tasks_gone() const;
    // Every followed task let go, with the signal it was about to get.
    void release_tasks() { follower_.reset(); }

    EventList& events() { return events_; }
    Devices& devices() { return devices_; }
    Rings& rings() { return rings_; }
    const std::vector<int>& tids() const { return tids_; }
    int cpu_count() const { return perf_cpu_map__nr(cpus_.get()); }
    // A ring added while the session runs (a followed task's own): to be watched.
    std::function<void(size_t ring)> on_new_ring;

private:
    Device& add_device(DeviceSpec spec, Device* parent);
    void open_device(Device& d);
    // `filter` replaces the planned event's filter (the clone for one followed task);
    // `newest_leader`: a group member joins its leader's newest evsel (the clone just made).
    std::vector<perf_evsel*> open_event(Device& d, size_t e, const CpuMap& cpus, const ThreadMap& threads,
                                        const std::string* filter = nullptr, bool newest_leader = false);
    const std::vector<int>* group_fds(Device& d, size_t e, size_t k, const CpuMap& cpus, const ThreadMap& threads,
                                      std::vector<int>& out);
    void open_nested(Device& parent);
    void install_filter(Device& d, size_t e, int fd, const std::string& text, const std::string& what);
    void map_rings(Device& d);
    size_t add_ring(Ring r);
    void join_ring(Ring& r, int fd);
    void follow(int tid);
    void follow_device(Device& d, int tid);
    void follow_filtered(Device& d, int tid);
    void share_cpu_rings(Device& d, perf_evsel* ev);
    bool task_exited(int tid);

    const Options& opt_;
    SessionServices& services_;
    EventClock& clock_;
    NestedResolver nested_;
    Workload* workload_ = nullptr;

    // The attachment every device starts from (SPEC §2.8: children open on the parent's maps);
    // a device may watch whole CPUs instead of the tasks (EventPlan::system_wide).
    CpuMap cpus_;              // -C ∩ online CPUs
    std::vector<int> tids_;    // the attached tasks, ascending; grows as tasks are followed
    bool per_thread_ = false;  // attached to tasks (-p, -t, workload), not to whole CPUs
    std::vector<Cgroup> cgroups_;
    std::unique_ptr<TaskFollower> follower_;

    EventList events_;  // every event of every device: enabled and disabled together
    Devices devices_;
    Rings rings_;
};

}  // namespace perfprof::perf
