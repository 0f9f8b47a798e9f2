// A session's devices and rings (SPEC §3.1): one running profiler with its options, events,
// rings and counters; the services every device shares are the session's. Shared by the
// opener (which makes them), the dispatcher (which feeds them) and the session.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "filter/expr.h"
#include "perf-prof/options.h"
#include "perf-prof/profiler.h"
#include "perf/event_list.h"
#include "perf/perfeval.h"
#include "perf/ring.h"

namespace perfprof::perf {

inline std::string event_name(const EventSpec& e) {
    return e.sys.empty() ? e.name : e.sys + ":" + e.name;
}

using ProfilerFactory = std::function<std::unique_ptr<Profiler>(Context&)>;

// What a device runs: the profiler's name (in messages), how to make it, its options.
struct DeviceSpec {
    std::string name;
    ProfilerFactory create;
    Options opt;
};

// A profiler named in an event list (SPEC §2.8) made into a device, its options parsed; the
// session's caller resolves it (lib/perf knows no registry and no command line). Throws Error
// ("profiler P cannot be nested in PARENT", usage errors) for what cannot be nested.
using NestedResolver = std::function<DeviceSpec(const NestedSpec& nested, const std::string& parent)>;

// What the session offers every device, behind its Context.
class SessionServices {
public:
    virtual tep::Tep& tep() = 0;
    virtual std::string_view comm(uint32_t tid) = 0;
    virtual int64_t realtime(uint64_t time) const = 0;  // of an event time as profilers see it
    virtual uint64_t now() const = 0;                   // the current event time (Context::now)
    virtual const filter::EvalHooks* eval_hooks() const = 0;
    virtual const std::vector<int>& threads() const = 0;  // attached tasks, ascending
    virtual int cpu_count() const = 0;
    virtual bool tsc_time() const = 0;
    virtual sym::Symbolizer& symbolizer() = 0;  // the session's, for every device
    // The launched command's exec environment (Context::set_exec_env).
    virtual bool set_exec_env(int pid, const std::string& name, const std::string& value) = 0;

protected:
    ~SessionServices() = default;
};

// One running profiler. It is the Context its profiler sees.
struct Device final : Context {
    Device(SessionServices& s, DeviceSpec spec, Device* p)
        : services(s), name(std::move(spec.name)), opt(std::move(spec.opt)), parent(p) {}

    const Options& options() const override { return opt; }
    tep::Tep& tep() override { return services.tep(); }
    std::string_view comm(uint32_t tid) override { return services.comm(tid); }
    void wall(uint64_t t, std::string& out) override { core::append_wall(services.realtime(t), out); }
    int64_t realtime(uint64_t t) override { return services.realtime(t); }
    uint64_t now() override { return services.now(); }
    FILE* out() override { return stdout; }
    const filter::EvalHooks* eval_hooks() override { return services.eval_hooks(); }
    sym::Symbolizer& symbolizer() override { return services.symbolizer(); }
    const std::vector<int>& threads() const override { return services.threads(); }
    int cpu_count() const override { return services.cpu_count(); }
    bool forwarding() const override { return parent != nullptr; }
    bool tsc_time() const override { return services.tsc_time(); }
    bool set_exec_env(int pid, const std::string& name, const std::string& value) override {
        return services.set_exec_env(pid, name, value);
    }

    int instances() const override;
    int instance_cpu(int instance) const override;
    bool read_counter(int event_index, int instance, std::vector<uint64_t>& words) override;
    std::string set_filter(int event_index, int instance, const std::string& filter) override;
    void enable_event(int event_index, bool on) override;

    int event_of(uint64_t id) const {
        auto it = ids.find(id);
        return it == ids.end() ? -1 : it->second;
    }
    // -N reached, or the device's perfeval said so: its events stop.
    void close() {
        closed = true;
        for (auto& list : evsels)
            for (perf_evsel* ev : list) perf_evsel__disable(ev);
    }

    SessionServices& services;
    std::string name;
    Options opt;
    Device* parent;
    std::unique_ptr<Profiler> profiler;
    EventPlan plan;
    // Where its events open: the session's tasks, or whole CPUs (system_wide or no tasks).
    CpuMap cpus;
    ThreadMap thread_map;
    bool per_thread = false;   // one event per task
    bool ring_per_cpu = true;  // rings per CPU (whole CPUs, or tasks with inherit)
    std::vector<std::vector<perf_evsel*>>
        evsels;  // per planned event: its evsels (x cgroups, + followed tasks)
    std::vector<std::vector<int>> cpu_instances;  // per planned event: evsel cpu index -> instance
    std::unordered_map<uint64_t, int> ids;        // sample id -> planned event (hot path)
    bool need_ids = false;
    std::vector<std::unique_ptr<filter::Program>> user_filters;  // per event, null = none
    std::vector<size_t> rings;
    int pages = 0;
    uint64_t sample_type = 0;  // of the first event: the sample_id trailer layout
    size_t time_off = 0;       // offset of PERF_SAMPLE_TIME in a sample body
    uint64_t samples = 0;
    bool closed = false;
    uint64_t lost_total = 0, lost_pending = 0;
    std::unique_ptr<PerfEval> perfeval;  // --perfeval-*, null when not asked for
};

// One mapped ring: an instance (a CPU or a task) of one device.
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

using Devices = std::vector<std::unique_ptr<Device>>;  // [0] is the top-level profiler
using Rings = std::vector<Ring>;

}  // namespace perfprof::perf
