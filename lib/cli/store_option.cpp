// One occurrence of an option of the shared table, validated and stored into Options
// (SPEC §1.4, §1.5).
#include "cli/store_option.h"

#include <algorithm>

#include "core/parse.h"
#include "unwind/call_graph.h"

namespace perfprof::cli {

void store_shared_option(const OptionRow& row, const std::string& v, Options& opt) {
    switch (row.id) {
        case Opt::Cpus:
            core::parse_cpu_list(v);
            opt.cpus = v;
            break;
        case Opt::Pids:
            core::parse_pid_list(v);
            opt.pids = v;
            break;
        case Opt::Tids:
            core::parse_pid_list(v);
            opt.tids = v;
            break;
        case Opt::Cgroups:
            opt.cgroups = v;
            opt.cgroups_given = true;
            break;
        case Opt::Inherit:
            opt.inherit = v != "false";
            break;
        case Opt::Watermark:
            opt.watermark = core::parse_percent(v, row.long_name);
            break;
        case Opt::Interval:
            opt.interval_ms = core::parse_count(v, row.long_name);
            break;
        case Opt::Output:
            opt.output = v;
            break;
        case Opt::Order:
            opt.order = true;
            break;
        case Opt::MmapPages:
            opt.mmap_pages = core::parse_pages(v);
            break;
        case Opt::ExitN:
            opt.exit_n = core::parse_count(v, row.long_name);
            break;
        case Opt::UsageSelf:
            opt.usage_self_ms = core::parse_count(v, row.long_name);
            break;
        case Opt::Version:
            opt.version = true;
            break;
        // One counter for both (SPEC §1.5.1): -q after -v gives -1, -v after -q gives 1.
        case Opt::Verbose:
            opt.verbose = std::max(opt.verbose, 0) + 1;
            break;
        case Opt::Quiet:
            opt.verbose = std::min(opt.verbose, 0) - 1;
            break;
        case Opt::Help:
            break;
        case Opt::UserCallchain:
            opt.user_callchain = v != "false";
            break;
        case Opt::KernelCallchain:
            opt.kernel_callchain = v != "false";
            break;
        case Opt::Event:
            opt.events.push_back(v);
            break;
        case Opt::Filter:
            opt.filter = v;
            opt.filter_given = true;
            break;
        case Opt::CallGraph:
            opt.call_graph = true;
            opt.dwarf_stack = 0;
            break;
        case Opt::CallGraphMode:
            opt.dwarf_stack = unwind::parse_call_graph(v);
            opt.call_graph = true;
            break;
        case Opt::FlameGraph:
            opt.flame_graph = v;
            opt.flame_graph_given = true;
            break;
        case Opt::Pprof:
            opt.pprof = v;
            opt.pprof_given = true;
            break;
        case Opt::Timeline:
            opt.timeline = v;
            opt.timeline_given = true;
            break;
        case Opt::Perins:
            opt.perins = true;
            break;
        case Opt::Ptrace:
            opt.ptrace = true;
            break;
        case Opt::Tsc:
            opt.tsc = true;
            break;
        case Opt::ClockOffset:
            opt.clock_offset = core::parse_count(v, row.long_name);
            break;
        case Opt::Monotonic:
            opt.monotonic = true;
            break;
        case Opt::SamplingLimit:
            opt.sampling_limit = core::parse_count(v, row.long_name);
            break;
        case Opt::PerfevalCpus:
            core::parse_cpu_list(v);
            opt.perfeval_cpus = v;
            break;
        case Opt::PerfevalPids:
            core::parse_pid_list(v);
            opt.perfeval_pids = v;
            break;
        case Opt::Own:
            break;
    }
}

}  // namespace perfprof::cli
