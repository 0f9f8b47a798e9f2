// The session: runs one profiler (and the profilers nested in its event list) on CPUs,
// threads, cgroups or a workload until a signal, -N, or the end of every attached task
// (SPEC §1.6, §1.11, §3). It owns the shared services (tracefs formats, task names, the event
// clock) and wires three parts: the Opener (attaching, devices, rings, following tasks), the
// Dispatcher (read → order → deliver → report) and a core::EventLoop (epoll, timers, signals).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/event_loop.h"
#include "filter/expr.h"
#include "perf-prof/options.h"
#include "perf-prof/profiler.h"
#include "perf/comm_table.h"
#include "perf/device.h"
#include "perf/event_clock.h"
#include "perf/workload.h"
#include "sym/symbolizer.h"
#include "tep/tep.h"

namespace perfprof::perf {

class Opener;
class Dispatcher;

class Session final : public SessionServices {
public:
    // `top` is the profiler to run; `nested` makes the profilers its plan names (SPEC §2.8):
    // without one, a nested profiler is an error.
    explicit Session(DeviceSpec top, NestedResolver nested = {});
    Session(const Options& opt, const ProfilerInfo& info, NestedResolver nested = {});
    ~Session();

    // Runs to the end; returns the exit status. Throws Error for setup failures.
    int run();

    // Services shared by every device.
    tep::Tep& tep() override;
    std::string_view comm(uint32_t tid) override;
    int64_t realtime(uint64_t time) const override;
    uint64_t now() const override;
    const filter::EvalHooks* eval_hooks() const override { return &hooks_; }
    const std::vector<int>& threads() const override;
    int cpu_count() const override;
    bool tsc_time() const override { return clock_->tsc(); }
    sym::Symbolizer& symbolizer() override { return symbols_; }
    bool set_exec_env(int pid, const std::string& name, const std::string& value) override;

private:
    void redirect_output();
    void setup_signals();
    void raise_fd_limit();
    void watch();
    void enable();
    void finish();
    void on_signal(const signalfd_siginfo& si);
    void on_stdin();
    void housekeeping();
    void reap();
    void usage_self();

    Options opt_;
    DeviceSpec top_;
    NestedResolver nested_;
    // Before the devices (the opener's): their profilers' outputs hold it until destroyed.
    sym::Symbolizer symbols_;
    std::unique_ptr<Workload> workload_;
    std::unique_ptr<tep::Tep> tep_;
    std::unique_ptr<CommTable> comms_;
    std::unique_ptr<EventClock> clock_;
    filter::EvalHooks hooks_;
    std::array<std::string, 8> hook_bufs_;  // comm_get() results, reused round-robin
    unsigned hook_next_ = 0;

    core::EventLoop loop_;
    std::unique_ptr<Opener> opener_;  // after workload_: its tasks are let go before it ends
    std::unique_ptr<Dispatcher> dispatcher_;

    std::string stdin_buf_;
    uint64_t interval_ms_ = 0;  // -i, or the top profiler's default
    unsigned house_ticks_ = 0;
    int64_t usage_wall_ = 0, usage_utime_ = 0, usage_stime_ = 0;
};

}  // namespace perfprof::perf
