// Options: every command-line value, parsed once by lib/cli (SPEC §1.4, §1.5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace perfprof {

// Every option perf-prof knows. The table in lib/cli/option_table.cpp gives each one its
// names, argument hint, help text and group; profilers list the ids they accept.
enum class Opt {
    // OPTION: accepted by every profiler (SPEC §1.4)
    Cpus,
    Pids,
    Tids,
    Cgroups,
    Watermark,
    Interval,
    Output,
    Order,
    MmapPages,
    ExitN,
    UsageSelf,
    Version,
    Verbose,
    Quiet,
    Help,
    // FILTER OPTION
    UserCallchain,
    KernelCallchain,
    ExcludeUser,
    ExcludeKernel,
    ExcludeGuest,
    ExcludeHost,
    IrqsDisabled,
    TifNeedResched,
    ExcludePid,
    NrRunningMin,
    NrRunningMax,
    SchedPolicy,
    Prio,
    // PROFILER OPTION
    Event,
    Filter,
    CallGraph,
    Inherit,
    Overwrite,
    Freq,
    Than,
    FlameGraph,  // keep last: kOptCount below
};
inline constexpr std::size_t kOptCount = static_cast<std::size_t>(Opt::FlameGraph) + 1;

// eBPF filters of profile (SPEC §1.9): each set one keeps only the samples that satisfy it.
struct EbpfFilters {
    std::optional<int> irqs_disabled;     // --irqs_disabled[=0|1]
    std::optional<int> tif_need_resched;  // --tif_need_resched[=0|1]
    std::optional<uint32_t> exclude_pid;  // --exclude_pid: not this process (tgid)
    std::optional<uint32_t> nr_running_min, nr_running_max;
    std::optional<int> sched_policy;  // SCHED_* number
    std::vector<int> prio;            // --prio LIST, sorted; empty = not given

    bool any() const {
        return irqs_disabled || tif_need_resched || exclude_pid || nr_running_min || nr_running_max ||
               sched_policy || !prio.empty();
    }
};

struct Options {
    // Attach model (SPEC §1.6). Empty = not given.
    std::string cpus;     // -C, raw CPU list text
    std::string pids;     // -p, raw PID list text
    std::string tids;     // -t, raw TID list text
    std::string cgroups;  // --cgroups, raw list text
    bool cgroups_given = false;

    std::optional<int> watermark;   // --watermark 0..100
    uint64_t interval_ms = 0;       // -i
    std::string output;             // -o
    bool order = false;             // --order
    std::optional<int> mmap_pages;  // -m, validated power of two
    uint64_t exit_n = 0;            // -N
    uint64_t usage_self_ms = 0;     // --usage-self
    int verbose = 0;                // -v / -q counter
    bool version = false;           // -V

    // Call chains: nullopt = the profiler's default half (SPEC §1.9).
    std::optional<bool> user_callchain;
    std::optional<bool> kernel_callchain;
    // PMU filters (SPEC §1.9): perf_event_attr exclude_* bits.
    bool exclude_user = false, exclude_kernel = false, exclude_guest = false, exclude_host = false;
    EbpfFilters ebpf;

    std::vector<std::string> events;  // -e, each occurrence kept
    std::string filter;               // --filter
    bool filter_given = false;
    bool call_graph = false;  // -g
    bool inherit = false;     // --inherit: child tasks are counted too
    bool overwrite = false;   // --overwrite: write_backward rings, read at ticks and at exit
    std::string flame_graph;  // --flame-graph NAME ("" = stdout)
    bool flame_graph_given = false;
    uint64_t freq = 0;        // -F, samples per second; 0 = not given
    std::optional<int> than;  // --than PCT

    std::string symbols;  // --symbols PATH (no profiler)

    std::string profiler;               // selected profiler name, empty = none
    std::vector<std::string> workload;  // argv of the workload, empty = none
};

}  // namespace perfprof
