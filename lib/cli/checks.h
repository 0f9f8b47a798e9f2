// What one option implies of another, and the combinations that would do nothing or not what
// they say, settled once the profiler is known (issue 24: no silent answers).
#pragma once

#include "perf-prof/options.h"
#include "perf-prof/profiler.h"

namespace perfprof::cli {

// For a profiler that runs a session: --flame-graph and --pprof turn on -g; throws
// Error::usage for options that another one given with them would make ineffective.
void settle(Options& opt, const ProfilerInfo& p);

}  // namespace perfprof::cli
