// The child sessions of serve's /debug/pprof/block and /debug/pprof/mutex (serve/profile_job):
// profilers of one target process and the threads it creates, whose finish() hands the
// gzipped profile.proto to `write`. Go's semantics: sample types contentions/count and
// delay/nanoseconds, by stack.
//   block: every time a thread of the target waits off the CPU (sleeps in S or D, stops),
//          the stack it waited in and for how long: preemption (a runnable thread waiting for
//          a CPU) is CPU contention, not blocking, and is left out.
//   mutex: every contended futex wait, by the stack of the thread that released it (Go's
//          mutex profile names the unlocker), delayed by the wait it ended.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "perf-prof/profiler.h"

namespace perfprof::serve {

using ProfileWriter = std::function<void(const std::string& gzipped)>;

std::unique_ptr<Profiler> block_sampler(Context& ctx, int pid, ProfileWriter write);
std::unique_ptr<Profiler> mutex_sampler(Context& ctx, int pid, ProfileWriter write);

}  // namespace perfprof::serve
