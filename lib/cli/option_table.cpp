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
    {Opt::Inherit, 0, "inherit", "", K::Flag, true, G::Option,
     "follow the threads and processes that the tasks of -p\n"
     "or the command create (the default; with -t: only\n"
     "when given); --no-inherit: only the tasks at start"},
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
    {Opt::Tsc, 0, "tsc", "", K::Flag, false, G::Option,
     "convert timestamps to TSC cycles (x86, where the\n"
     "kernel publishes the conversion)"},
    {Opt::ClockOffset, 0, "clock-offset", "n", K::Value, false, G::Option,
     "add n to every timestamp (after --tsc)"},
    {Opt::Monotonic, 0, "monotonic", "", K::Flag, false, G::Option, "timestamps from CLOCK_MONOTONIC"},
    {Opt::UsageSelf, 0, "usage-self", "ms", K::Value, false, G::Option,
     "print perf-prof's own CPU usage and max RSS\n"
     "every N ms"},
    {Opt::SamplingLimit, 0, "sampling-limit", "N", K::Value, false, G::Option,
     "with --perfeval-*: close when a listed CPU or\n"
     "thread has more than N events a second"},
    {Opt::PerfevalCpus, 0, "perfeval-cpus", "cpu[-cpu],...", K::Value, false, G::Option,
     "with -i: print the events per second of these\n"
     "CPUs at each tick"},
    {Opt::PerfevalPids, 0, "perfeval-pids", "pid,...", K::Value, false, G::Option,
     "with -i: print the events per second of these\n"
     "processes at each tick"},
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
    {Opt::Event, 'e', "event", "EVENT,...", K::Value, false, G::Profiler,
     "event selector; see 'perf-prof list'"},
    {Opt::Filter, 0, "filter", "filter", K::Value, false, G::Profiler, "event filter, profiler-specific"},
    {Opt::CallGraph, 'g', "", "", K::Flag, false, G::Profiler, "record call stacks"},
    {Opt::CallGraphMode, 0, "call-graph", "fp|dwarf[,size]", K::Value, false, G::Profiler,
     "record call stacks; the user part through frame\n"
     "pointers (fp, as -g), or unwound from the call-frame\n"
     "information with a copy of size bytes of the user\n"
     "stack per sample (dwarf, default 8192)"},
    {Opt::FlameGraph, 0, "flame-graph", "file", K::Value, false, G::Profiler,
     "record stacks (-g implied) and count them into\n"
     "file.folded, drawn in file.svg (\"\" = folded to\n"
     "stdout); with -i one file-YYYYMMDD-HHMMSS.svg per\n"
     "interval"},
    {Opt::Pprof, 0, "pprof", "file", K::Value, false, G::Profiler,
     "record stacks (-g implied) and write them as a\n"
     "gzipped pprof profile.proto to file (whole run,\n"
     "also with -i)"},
    {Opt::Timeline, 0, "timeline", "file", K::Value, false, G::Profiler,
     "stream the events to file as Chrome trace-event JSON\n"
     "(Perfetto UI, chrome://tracing)"},
    {Opt::Perins, 0, "perins", "", K::Flag, false, G::Profiler, "statistics per instance"},
    {Opt::Ptrace, 0, "ptrace", "", K::Flag, false, G::Profiler,
     "with -p/-t: also follow the threads and processes\n"
     "they create (ptrace)"},
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
        if (*row.long_name && name == row.long_name) return &row;
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
