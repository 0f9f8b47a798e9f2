#include "cli/option_table.h"

#include <array>
#include <cstddef>

namespace perfprof::cli {

namespace {

constexpr std::size_t kRows = kOptCount;

using K = ArgKind;
using G = Group;

// Rows are kept in enum order so that option_row() is an index; the static_assert below
// catches a row added in the wrong place (or an Opt added without a row).
constexpr std::array<OptionRow, kRows> kTable{{
    {Opt::Cpus, 'C', "cpus", "cpu[-cpu],...", K::Value, false, G::Option,
     "CPUs to monitor, e.g. 0-3,8 (default: all online)"},
    {Opt::Pids, 'p', "pids", "pid,...", K::Value, false, G::Option,
     "attach to every thread of these processes"},
    {Opt::Tids, 't', "tids", "tid,...", K::Value, false, G::Option, "attach to these threads"},
    {Opt::Cgroups, 0, "cgroups", "cgroup,...", K::Value, false, G::Option,
     "attach to these perf_event cgroups: names, or\n"
     "regular expressions matched against their paths"},
    {Opt::Watermark, 0, "watermark", "0-100", K::Value, false, G::Option,
     "wake up when a ring buffer is this percent full\n"
     "(0: on every event)"},
    {Opt::Interval, 'i', "interval", "ms", K::Value, false, G::Option,
     "period in ms of the tick that flushes the ring\n"
     "buffers and prints periodic output"},
    {Opt::Output, 'o', "output", "file", K::Value, false, G::Option,
     "append stdout and stderr to file (reopened on\n"
     "SIGUSR1)"},
    {Opt::Order, 0, "order", "", K::Flag, false, G::Option, "deliver events in timestamp order"},
    {Opt::MmapPages, 'm', "mmap-pages", "pages", K::Value, false, G::Option,
     "mmap data pages per ring buffer, a power of two"},
    {Opt::ExitN, 'N', "exit-N", "N", K::Value, false, G::Option, "exit after N samples"},
    {Opt::UsageSelf, 0, "usage-self", "ms", K::Value, false, G::Option,
     "print perf-prof's own CPU usage and max RSS\n"
     "every N ms"},
    {Opt::Version, 'V', "version", "", K::Flag, false, G::Option, "print the version and exit"},
    {Opt::Verbose, 'v', "verbose", "", K::Counter, false, G::Option, "be more verbose (repeat for more)"},
    {Opt::Quiet, 'q', "quiet", "", K::Counter, false, G::Option,
     "be quiet; a -q after -v sets the level to -1"},
    {Opt::Help, 'h', "help", "", K::Flag, false, G::Option, "show this help"},
    {Opt::UserCallchain, 0, "user-callchain", "", K::Flag, true, G::Filter,
     "include user-space frames in call stacks\n"
     "(--no-user-callchain leaves them out)"},
    {Opt::KernelCallchain, 0, "kernel-callchain", "", K::Flag, true, G::Filter,
     "include kernel frames in call stacks\n"
     "(--no-kernel-callchain leaves them out)"},
    {Opt::ExcludeUser, 0, "exclude-user", "", K::Flag, false, G::Filter, "sample kernel mode only"},
    {Opt::ExcludeKernel, 0, "exclude-kernel", "", K::Flag, false, G::Filter, "sample user mode only"},
    {Opt::ExcludeGuest, 0, "exclude-guest", "", K::Flag, false, G::Filter, "do not sample guests"},
    {Opt::ExcludeHost, 'G', "exclude-host", "", K::Flag, false, G::Filter, "sample guests only"},
    {Opt::IrqsDisabled, 0, "irqs_disabled", "0|1", K::OptionalValue, false, G::Filter,
     "eBPF: keep samples taken with interrupts disabled\n"
     "(=0: enabled)"},
    {Opt::TifNeedResched, 0, "tif_need_resched", "0|1", K::OptionalValue, false, G::Filter,
     "eBPF: keep samples of tasks with TIF_NEED_RESCHED\n"
     "set (=0: clear)"},
    {Opt::ExcludePid, 0, "exclude_pid", "PID", K::Value, false, G::Filter,
     "eBPF: drop the samples of this process"},
    {Opt::NrRunningMin, 0, "nr_running_min", "N", K::Value, false, G::Filter,
     "eBPF: keep samples of CPUs with at least N runnable\n"
     "tasks"},
    {Opt::NrRunningMax, 0, "nr_running_max", "N", K::Value, false, G::Filter,
     "eBPF: keep samples of CPUs with at most N runnable\n"
     "tasks"},
    {Opt::SchedPolicy, 0, "sched_policy", "N", K::Value, false, G::Filter,
     "eBPF: keep samples of tasks with this policy (0\n"
     "NORMAL, 1 FIFO, 2 RR, 3 BATCH, 5 IDLE, 6 DEADLINE)"},
    {Opt::Prio, 0, "prio", "prio[-prio],...", K::Value, false, G::Filter,
     "eBPF: keep samples of tasks with these priorities\n"
     "(0-99 real-time, 100-139 normal)"},
    {Opt::Event, 'e', "event", "EVENT,...", K::Value, false, G::Profiler,
     "event selector; see 'perf-prof list'"},
    {Opt::Filter, 0, "filter", "filter", K::Value, false, G::Profiler, "event filter, profiler-specific"},
    {Opt::CallGraph, 'g', "call-graph", "", K::Flag, false, G::Profiler, "record call stacks"},
    {Opt::Inherit, 0, "inherit", "", K::Flag, false, G::Profiler,
     "also trace the children the attached tasks create"},
    {Opt::Overwrite, 0, "overwrite", "", K::Flag, false, G::Profiler,
     "keep only the newest events in each ring buffer;\n"
     "read them at each -i tick and at exit"},
    {Opt::Freq, 'F', "freq", "n", K::Value, false, G::Profiler, "samples per second on each CPU or thread"},
    {Opt::Than, 0, "than", "PCT", K::Value, false, G::Profiler,
     "print only CPUs/threads busier than PCT percent\n"
     "of each second"},
    {Opt::FlameGraph, 0, "flame-graph", "file", K::Value, false, G::Profiler,
     "with -g: count stacks into file.folded for\n"
     "flamegraph.pl (\"\" = stdout); per interval with -i"},
}};

constexpr bool rows_in_enum_order() {
    for (std::size_t i = 0; i < kTable.size(); ++i)
        if (static_cast<std::size_t>(kTable[i].id) != i) return false;
    return true;
}
static_assert(rows_in_enum_order(), "option table rows must follow the order of enum Opt");

}  // namespace

std::span<const OptionRow> option_table() {
    return kTable;
}

const OptionRow& option_row(Opt id) {
    return kTable[static_cast<std::size_t>(id)];
}

const OptionRow* find_long(std::string_view name) {
    for (const auto& row : kTable)
        if (name == row.long_name) return &row;
    return nullptr;
}

const OptionRow* find_short(char c) {
    if (c == 0) return nullptr;
    for (const auto& row : kTable)
        if (row.short_name == c) return &row;
    return nullptr;
}

const char* group_title(Group g) {
    switch (g) {
        case Group::Option:
            return "OPTION";
        case Group::Filter:
            return "FILTER OPTION";
        case Group::Profiler:
            return "PROFILER OPTION";
    }
    return "OPTION";
}

}  // namespace perfprof::cli
