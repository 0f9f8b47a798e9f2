// The device of a session (SPEC §3.1), shared by the session's translation units.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "perf/perfeval.h"
#include "perf/session.h"

namespace perfprof::perf {

inline std::string event_name(const EventSpec& e) {
    return e.sys.empty() ? e.name : e.sys + ":" + e.name;
}

// One running profiler: its options, events, rings and counters (SPEC §3.1). It is the
// Context its profiler sees; the shared services are the session's.
struct Session::Device final : Context {
    Device(Session& s, const ProfilerInfo& i, const Options& o, Device* p)
        : session(s), info(i), opt(o), parent(p) {}

    const Options& options() const override { return opt; }
    tep::Tep& tep() override { return session.tep(); }
    std::string_view comm(uint32_t tid) override { return session.comm(tid); }
    void wall(uint64_t t, std::string& out) override { core::append_wall(session.realtime(t), out); }
    int64_t realtime(uint64_t t) override { return session.realtime(t); }
    FILE* out() override { return stdout; }
    const filter::EvalHooks* eval_hooks() override { return session.eval_hooks(); }
    const std::vector<int>& threads() const override { return session.tids_; }
    int cpu_count() const override { return perf_cpu_map__nr(session.cpus_.get()); }
    bool forwarding() const override { return parent != nullptr; }
    bool tsc_time() const override { return session.clock_->tsc(); }
    sym::Symbolizer& symbolizer() override { return session.symbols_; }

    int event_of(uint64_t id) const {
        auto it = ids.find(id);
        return it == ids.end() ? -1 : it->second;
    }

    Session& session;
    const ProfilerInfo& info;
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
        evsels;                               // per planned event: its evsels (x cgroups, + followed tasks)
    std::vector<std::vector<int>> instances;  // per planned event: evsel cpu index -> instance
    std::unordered_map<uint64_t, int> ids;    // sample id -> planned event (hot path)
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

}  // namespace perfprof::perf
