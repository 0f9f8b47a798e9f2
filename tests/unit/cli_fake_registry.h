// The fake registry of the tests of lib/cli's parser and help layout: "sig" accepts the filter
// and call-chain options, "tr" only -e.
#pragma once

#include <string>
#include <vector>

#include "perf-prof/options.h"
#include "perf-prof/profiler.h"

namespace perfprof::cli {

inline const ProfilerInfo kSig{
    .name = "sig",
    .summary = "Demo signal profiler",
    .usage = "[OPTION...] [--filter comm] [-g] [cmd [args...]]",
    .body = {"SYNOPSIS", "    Print every signal.", "", "EXAMPLES", "    perf-prof sig -g", ""},
    .options = {{Opt::Filter, "task name glob"},
                {Opt::CallGraph, nullptr},
                {Opt::UserCallchain, nullptr},
                {Opt::KernelCallchain, nullptr}},
};
inline const ProfilerInfo kTr{
    .name = "tr",
    .summary = "Demo tracer",
    .usage = "-e EVENT [OPTION...]",
    .body = {"EXAMPLES", "    perf-prof tr -e sched:sched_wakeup"},
    .options = {{Opt::Event, nullptr}},
};
inline const std::vector<const ProfilerInfo*> kRegistry{&kSig, &kTr};

// The help lines of -g and --call-graph, in every profiler that records stacks.
inline const std::string kCallGraphHelp =
    "  -g                            record call stacks\n"
    "      --call-graph <fp|dwarf[,size]>\n"
    "                                record call stacks; the user part through frame\n"
    "                                pointers (fp, as -g), or unwound from the call-frame\n"
    "                                information with a copy of size bytes of the user\n"
    "                                stack per sample (dwarf, default 8192)\n";

}  // namespace perfprof::cli
