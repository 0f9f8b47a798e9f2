// Options: every command-line value, parsed once by lib/cli (SPEC §1.4, §1.5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof {

// The options of the shared table (lib/cli/option_table.cpp): those every profiler takes and
// those several profilers take. Each has a row there with its names, argument hint, help text
// and group; profilers list the ids they accept. An option only one profiler takes is declared
// in that profiler's file instead (ProfilerInfo::own_options) and parsed into its own struct.
enum class Opt {
    // OPTION: accepted by every profiler (SPEC §1.4)
    Cpus,
    Pids,
    Tids,
    Cgroups,
    Inherit,
    Watermark,
    Interval,
    Output,
    Order,
    MmapPages,
    ExitN,
    Tsc,
    ClockOffset,
    Monotonic,
    UsageSelf,
    SamplingLimit,
    PerfevalCpus,
    PerfevalPids,
    Version,
    Verbose,
    Quiet,
    Help,
    // FILTER OPTION
    UserCallchain,
    KernelCallchain,
    // PROFILER OPTION
    Event,
    Filter,
    CallGraph,
    CallGraphMode,  // --call-graph fp|dwarf[,SIZE]: accepted wherever CallGraph (-g) is
    FlameGraph,
    Pprof,
    Timeline,
    Perins,
    Ptrace,
    Own,  // a row of a profiler's own options: not in the shared table; keep last
};
inline constexpr std::size_t kOptCount = static_cast<std::size_t>(Opt::Own);

enum class ArgKind {
    Flag,           // no argument
    Counter,        // no argument, counts occurrences (-v, -q)
    Value,          // mandatory argument: "--x v", "--x=v", "-xv", "-x v"
    OptionalValue,  // argument only in the attached form "--x=v"; a separate word is never taken
};

// The help groups, in the order profiler help shows them (SPEC §1.8.2).
enum class Group { Option, Filter, Profiler };

// What one occurrence on the command line gave an option: a Value its text; a Flag "1", or "0"
// for --no-NAME; an OptionalValue its attached text, or nothing when given bare.
using OptionValue = std::optional<std::string_view>;

// The options struct of one profiler: derive from it in the profiler's file.
struct ProfilerOptions {
    virtual ~ProfilerOptions() = default;
};

struct OptionRow {
    Opt id;                 // Opt::Own for a profiler's own option
    char short_name;        // 0 = none
    const char* long_name;  // without dashes
    const char* hint;       // argument hint shown as <hint>; "" for flags and counters
    ArgKind kind;
    bool negatable;  // accepts --no-NAME
    Group group;
    const char* help;  // default help text; may contain '\n'
    // Own options: validates the value and stores it; throws Error::usage on a bad one.
    void (*store)(ProfilerOptions& own, OptionValue value) = nullptr;
};

struct Options {
    // Attach model (SPEC §1.6). Empty = not given.
    std::string cpus;     // -C, raw CPU list text
    std::string pids;     // -p, raw PID list text
    std::string tids;     // -t, raw TID list text
    std::string cgroups;  // --cgroups, raw list text
    bool cgroups_given = false;
    // --inherit / --no-inherit; unset: the tasks that -p or a command create are followed.
    std::optional<bool> inherit;

    std::optional<int> watermark;   // --watermark 0..100
    uint64_t interval_ms = 0;       // -i
    std::string output;             // -o
    bool order = false;             // --order
    std::optional<int> mmap_pages;  // -m, validated power of two
    uint64_t exit_n = 0;            // -N
    uint64_t usage_self_ms = 0;     // --usage-self
    int verbose = 0;                // -v / -q counter
    bool version = false;           // -V

    // Event time (SPEC §1.4, §3.6).
    bool tsc = false;           // --tsc: timestamps in TSC cycles
    uint64_t clock_offset = 0;  // --clock-offset: added to every (converted) timestamp
    bool monotonic = false;     // --monotonic: the kernel stamps with CLOCK_MONOTONIC

    // Performance evaluation (SPEC §1.4): samples per second on these CPUs / processes.
    std::string perfeval_cpus, perfeval_pids;  // raw list text, validated
    uint64_t sampling_limit = 0;               // --sampling-limit: close above this rate

    // Call chains: nullopt = the profiler's default half (SPEC §1.9).
    std::optional<bool> user_callchain;
    std::optional<bool> kernel_callchain;

    std::vector<std::string> events;  // -e, each occurrence kept
    std::string filter;               // --filter
    bool filter_given = false;
    bool call_graph = false;   // -g or --call-graph: record call stacks
    uint32_t dwarf_stack = 0;  // --call-graph dwarf[,SIZE]: user stack bytes copied per sample (0 = fp)
    std::string flame_graph;   // --flame-graph NAME ("" = stdout)
    bool flame_graph_given = false;
    std::string pprof;  // --pprof FILE: the stacks as a gzipped pprof profile.proto
    bool pprof_given = false;
    std::string timeline;  // --timeline FILE: Chrome trace-event JSON, streamed
    bool timeline_given = false;
    bool perins = false;  // --perins: statistics per instance (thread, key)
    bool ptrace = false;  // --ptrace: follow tasks the attached ones create (SPEC §3.10)

    std::string symbols;  // --symbols PATH (no profiler)

    std::string profiler;               // selected profiler name, empty = none
    std::vector<std::string> workload;  // argv of the workload, empty = none
    std::vector<std::string> words;     // a takes_words profiler's own arguments (ProfilerInfo)

    // The selected profiler's own options, parsed into its struct (ProfilerInfo::own_options);
    // shared by copies, never changed after parsing.
    std::shared_ptr<const ProfilerOptions> own;

    // The own options as the profiler's struct T; T's defaults when none were parsed.
    template <class T>
    const T& own_as() const {
        static const T defaults{};
        return own ? static_cast<const T&>(*own) : defaults;
    }
};

// -p, -t or a command: the session watches tasks rather than CPUs (SPEC §1.6).
inline bool attaches_tasks(const Options& o) {
    return !o.pids.empty() || !o.tids.empty() || !o.workload.empty();
}

// Whether the threads and processes that the attached tasks create, at any time, are watched
// too: by default with -p and a command (as perf record follows them), with -t (which names
// threads) only when --inherit is given; never after --no-inherit.
inline bool inherits(const Options& o) {
    return attaches_tasks(o) && o.inherit.value_or(o.tids.empty());
}

}  // namespace perfprof
