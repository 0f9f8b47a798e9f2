// The command line (SPEC §1.2): argv → Options, the selected profiler and what to do.
#pragma once

#include <string>
#include <vector>

#include "perf-prof/options.h"
#include "perf-prof/profiler.h"

namespace perfprof::cli {

enum class Action {
    Run,           // run `profiler` with `opt`
    MainHelp,      // print_main_help, exit 129
    ProfilerHelp,  // print_profiler_help(*profiler), exit 129
    Version,       // print "perf-prof VERSION", exit 0
    Symbols,       // the --symbols service on opt.symbols
    HelpWord,      // the `help` word (SPEC §1.10): run_help_word(opt, profiler), exit 0
};

struct Parsed {
    Action action = Action::MainHelp;
    Options opt;
    const ProfilerInfo* profiler = nullptr;
    // The workload followed "--". Without it, -v echoes the workload words as a hint that a
    // mistyped option may have become one (SPEC §1.2 rule 8).
    bool separator = false;
};

// `args` is argv[1..]; `registry` the profilers that may be named. Throws Error::usage on any
// command-line error; values are validated here, so a Run result is well-formed.
Parsed parse(const std::vector<std::string>& args, const std::vector<const ProfilerInfo*>& registry);

}  // namespace perfprof::cli
