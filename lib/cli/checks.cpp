#include "cli/checks.h"

#include <tuple>

#include "cli/help.h"
#include "perf-prof/error.h"

namespace perfprof::cli {

namespace {

std::string see(const ProfilerInfo& p) {
    return std::string(" (see 'perf-prof ") + p.name + " -h')";
}

// SPEC §1.6 picks one attach mode, -p > -t > command > CPUs, and ignores the others: a
// command given with -p was never run, and -C with -p changed nothing.
void check_attach(const Options& opt, const ProfilerInfo& p) {
    const char* tasks = !opt.pids.empty() ? "-p" : !opt.tids.empty() ? "-t" : nullptr;
    if (!opt.pids.empty() && !opt.tids.empty())
        throw Error::usage("-p and -t: give one of them (-p attaches to every thread of the processes)" +
                           see(p));
    if (tasks && !opt.workload.empty())
        throw Error::usage(std::string(tasks) + " and a command: give one of them (with " + tasks +
                           " the command would not be run)" + see(p));
    const char* follow = tasks ? tasks : !opt.workload.empty() ? "a command" : nullptr;
    if (!follow) return;
    const char* cpus = !opt.cpus.empty() ? "-C" : opt.cgroups_given ? "--cgroups" : nullptr;
    if (cpus)
        throw Error::usage(std::string(cpus) + " and " + follow +
                           ": give one of them (the events follow the " +
                           (tasks ? "attached tasks" : "command") + " on every CPU; " + cpus +
                           " is for a system-wide run)" + see(p));
}

}  // namespace

void settle(Options& opt, const ProfilerInfo& p) {
    // A flame graph or a pprof profile is drawn from stacks: asking for one asks for them, as
    // perf's --call-graph implies -g. (Was: --flame-graph silently ignored, --pprof an error.)
    const bool draws =
        (opt.flame_graph_given && accepts(p, Opt::FlameGraph)) || (opt.pprof_given && accepts(p, Opt::Pprof));
    if (draws && !opt.call_graph && accepts(p, Opt::CallGraph)) opt.call_graph = true;
    if (opt.call_graph && opt.user_callchain == false && opt.kernel_callchain == false)
        throw Error::usage("-g with --no-user-callchain and --no-kernel-callchain: no frame left to record" +
                           see(p));
    // Profilers with -e lists also record stacks per event (the stack attribute); the others
    // only with -g.
    if (!opt.call_graph && !accepts(p, Opt::Event)) {
        for (const auto& [given, half, id] : {std::tuple{opt.user_callchain, "user", Opt::UserCallchain},
                                              {opt.kernel_callchain, "kernel", Opt::KernelCallchain}})
            if (given && accepts(p, id))
                throw Error::usage(std::string(*given ? "--" : "--no-") + half +
                                   "-callchain chooses the frames of the stacks -g records: give -g too" +
                                   see(p));
    }
    check_attach(opt, p);
    if (opt.sampling_limit && opt.perfeval_cpus.empty() && opt.perfeval_pids.empty())
        throw Error::usage(
            "--sampling-limit needs --perfeval-cpus or --perfeval-pids: it limits the rate of "
            "their events" +
            see(p));
}

}  // namespace perfprof::cli
