// The profiler interface (DESIGN.md "The profiler interface") and its registry entry.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "perf-prof/field.h"
#include "perf-prof/options.h"
#include "perf-prof/sample.h"

struct tep_event;

namespace perfprof {

namespace filter {
struct EvalHooks;
}
namespace tep {
class Tep;
}
namespace event {
struct Resolved;
}
namespace sym {
class Symbolizer;
}

enum class EventKind { Tracepoint, Kprobe, Kretprobe, Uprobe, Uretprobe, Other };

// One event to open on every instance.
struct EventSpec {
    std::string sys, name;  // "sys:name"; for probes sys is "kprobe"/"uprobe"/..., name the function
    EventKind kind = EventKind::Tracepoint;
    perf_event_attr attr{};          // sample_type, period, wake-up bits, ...
    std::string filter;              // ftrace filter installed with PERF_EVENT_IOC_SET_FILTER
    std::string probe;               // kprobe_func / uprobe_path: the session points config1 here
    std::vector<int> cpus;           // cpus= attribute: only these CPUs (∩ the device's); empty = all
    struct tep_event* tp = nullptr;  // tracepoint format, for rendering and field access
    std::vector<Field> fields;       // the record's fields, for user-space filters and EXPRs
    int bpf_prog = -1;  // BPF_PROG_TYPE_PERF_EVENT program fd (PERF_EVENT_IOC_SET_BPF), owned by the profiler
    // The index in EventPlan::events of the leader of this event's group (an earlier event),
    // -1 when it leads its own. A member opens with its leader's fd on the same CPU or task
    // (perf_event_open's group_fd), on the leader's CPUs or some of them (cpus=); a leader
    // with PERF_FORMAT_GROUP reads the whole group, in a sample or with Context::read_counter.
    int group_leader = -1;
    // Not enabled when the session starts: Context::enable_event turns it on (a filter set at
    // run time with Context::set_filter, which the kernel accepts once per event, comes first).
    bool start_disabled = false;
};

// A profiler named inside an event list (SPEC §2.8), opened as a child whose samples are
// forwarded to the parent.
struct NestedSpec {
    std::string profiler;   // registered name
    std::string options;    // PROFILER-OPTIONS text, split on single spaces
    std::vector<int> cpus;  // cpus= attribute
};

// What a profiler asks the session for.
struct EventPlan {
    std::vector<EventSpec> events;
    std::vector<NestedSpec> nested;
    int pages = 2;                 // default ring pages (the profiler applies its own x2 for stacks)
    bool per_event_wakeup = true;  // false: batched wake-ups (watermark) plus a short timer flush
    bool order = false;            // deliver in global timestamp order
    bool user_filter = false;      // a filter the kernel rejects is evaluated here (SPEC §2.6.2)
    bool overwrite = false;        // write_backward rings, read at each tick and at exit
    bool inherit = false;          // per-thread events count the threads' children too (one ring per CPU)
    // Watch whole CPUs even when the session is attached to tasks: the profiler selects those
    // tasks itself, by kernel filters built from Context::threads() (task-state, SPEC §4.4.2).
    bool system_wide = false;
    // Follow the tasks the attached ones create (SPEC §3.10): the session ptrace-attaches them
    // and, before a new task runs, opens this device's events on it or, for a system_wide
    // plan, opens them once more on every CPU with the filters Profiler::filters_for() gives.
    bool follow = false;
    // The -i period (ms) when the command line gives none (top, oncpu, hrcount: 1000); 0 = none.
    uint64_t interval_ms = 0;
    // Profiler::tick() every tick_ms (stat's read period), besides -i; 0 = never.
    uint64_t tick_ms = 0;
    // The -N count when the command line gives none (expr: 5); 0 = none.
    uint64_t exit_n = 0;
};

// Services the session offers a profiler. Valid from construction to destruction.
class Context {
public:
    virtual ~Context() = default;
    virtual const Options& options() const = 0;
    virtual tep::Tep& tep() = 0;                                  // tracefs formats (mounts tracefs)
    virtual std::string_view comm(uint32_t tid) = 0;              // task name, "<...>" when unknown
    virtual void wall(uint64_t perf_time, std::string& out) = 0;  // appends WALL(ev), 26 characters
    // WALL(ev) as CLOCK_REALTIME ns: ages on the wall clock (kmemleak --than).
    virtual int64_t realtime(uint64_t perf_time) = 0;
    // The current time in event time (what Sample::time says now), 0 when the session's
    // clock cannot tell: intervals still open at exit end here.
    virtual uint64_t now() { return 0; }
    virtual FILE* out() = 0;                            // stdout, or the -o file
    virtual const filter::EvalHooks* eval_hooks() = 0;  // comm_get, syscall_name, ... for EXPRs
    // The threads the session is attached to (-p, -t, a workload), ascending; empty on CPUs.
    virtual const std::vector<int>& threads() const = 0;
    // The number of CPUs the session watches (-C ∩ online): its rings when not on threads().
    virtual int cpu_count() const = 0;
    // Nested in another profiler, which receives our samples and asks us to print them (SPEC §2.8).
    virtual bool forwarding() const = 0;
    // Sample times are TSC cycles (--tsc, where the kernel publishes the conversion), not ns.
    virtual bool tsc_time() const = 0;
    // The session's symbolizer: stack printers and outputs symbolize through it.
    virtual sym::Symbolizer& symbolizer() = 0;
    // Sets NAME=VALUE in the environment the command the session launched is exec'd with
    // (kmemleak --user's agent: LD_PRELOAD and its channel). True only when `pid` is that
    // command and it has not been released yet (profilers are made before the release).
    virtual bool set_exec_env(int pid, const std::string& name, const std::string& value) = 0;

    // The planned events at run time. An instance is a ring: a CPU (instance_cpu() says which)
    // or an attached thread (instance_cpu() is -1).
    virtual int instances() const { return 0; }
    virtual int instance_cpu(int instance) const {
        (void)instance;
        return -1;
    }
    // read() of planned event `event_index` on `instance`: the words its read_format gives
    // (read them with perfprof::ReadValues); a PERF_FORMAT_GROUP leader reads its whole group.
    // False when the event is not open on that instance (cpus=) or the read fails.
    virtual bool read_counter(int event_index, int instance, std::vector<uint64_t>& words) {
        (void)event_index, (void)instance, (void)words;
        return false;
    }
    // Replaces the kernel filter of planned event `event_index` on `instance` (-1: every
    // instance). Returns "" or the kernel's error ("Invalid argument").
    virtual std::string set_filter(int event_index, int instance, const std::string& filter) {
        (void)event_index, (void)instance, (void)filter;
        return "not supported";
    }
    // Enables or disables planned event `event_index` on every instance.
    virtual void enable_event(int event_index, bool on) { (void)event_index, (void)on; }
};

class Profiler {
public:
    virtual ~Profiler() = default;
    virtual EventPlan plan() = 0;                       // which events, sample_type, filters
    virtual void sample(const Sample& s) noexcept = 0;  // hot path
    // Prints a sample of this profiler's own events for a parent it is nested in (SPEC §2.8).
    virtual void print_event(const Sample& s) noexcept { (void)s; }
    virtual void lost(const LostRange&) noexcept {}  // drop pairing state in that window
    // A context switch of a watched task, for plans with an event opened with
    // attr.context_switch; delivered in the samples' order (hot path).
    virtual void context_switch(const ContextSwitch&) noexcept {}
    virtual void interval() {}  // every -i ms
    virtual void finish() {}    // flush every output, also on SIGINT
    virtual void sigusr1() {}   // SIGUSR1: the profiler's own statistics
    virtual void tick() {}      // every EventPlan::tick_ms
    // A system_wide plan following tasks: for each planned event, the kernel filter that
    // selects just the tasks `tids` (ascending), or "" where the event needs no copy for them.
    virtual std::vector<std::string> filters_for(const std::vector<int>& tids) {
        (void)tids;
        return {};
    }
};

// One option a profiler accepts, with an optional help override (SPEC §1.7).
struct OptUse {
    Opt id;
    const char* help = nullptr;
};

// A registry entry: one per line of profilers/profilers.def, written with designated
// initializers (.name = "trace", .summary = ..., ...).
struct ProfilerInfo {
    // A Profiler runs a session (create); a Command runs none (run_words): list, usdt,
    // flamegraph, heatmap, serve. profilers.def lists the one with PROFILER, the other with COMMAND.
    enum class Kind { Profiler, Command };

    const char* name = "";
    Kind kind = Kind::Profiler;
    const char* summary = "";            // one-line description (main help and profiler help)
    const char* usage = "";              // argument synopsis after "perf-prof NAME "
    std::vector<std::string> body = {};  // SYNOPSIS / TRACEPOINT / EXAMPLES lines (indent relative)
    std::vector<OptUse> options = {};    // accepted options beyond the global OPTION group
    std::unique_ptr<Profiler> (*create)(Context&) = nullptr;  // a Profiler's
    // A Command runs this instead and returns the exit status: its words after the options are
    // opt.workload (SPEC §1.2 rule 6), its own options in opt.own.
    int (*run_words)(const Options& opt) = nullptr;
    // false: of the OPTION group only -V, -v, -q and -h (SPEC §1.7, list and usdt).
    bool global_options = true;
    // A Profiler whose words after the options are its own arguments, in Options::words,
    // never a workload (hrtimer's and expr's expression, breakpoint's addresses: SPEC-PROFILERS
    // §P0); options may follow the words.
    bool takes_words = false;
    // The `help` word (SPEC §1.10): the command template for these resolved events, one line
    // ending in a newline; null = no template.
    std::string (*help_template)(const Options& opt, const std::vector<event::Resolved>& events) = nullptr;
    // Options only this profiler takes, declared in its file: shown in its help like the
    // shared ones, parsed into the struct make_options() creates (Options::own; see
    // perf-prof/own_options.h).
    std::span<const OptionRow> own_options = {};
    std::shared_ptr<ProfilerOptions> (*make_options)() = nullptr;

    bool is_command() const { return kind == Kind::Command; }
};

// ProfilerInfo::create for a profiler class constructed from its Context.
template <class P>
std::unique_ptr<Profiler> create_profiler(Context& ctx) {
    return std::make_unique<P>(ctx);
}

// The explicit list, in profilers.def order.
const std::vector<const ProfilerInfo*>& all_profilers();
const ProfilerInfo* find_profiler(std::string_view name);
// Their names, in the same order: what an event list may name as a nested profiler (SPEC §2.8).
const std::vector<std::string>& profiler_names();

}  // namespace perfprof
