#include "serve/wait_samplers.h"

#include <linux/perf_event.h>

#include "lock/futex_events.h"
#include "lock/futex_waits.h"
#include "lock/stack_ids.h"
#include "perf/proc_tasks.h"
#include "sched/off_cpu.h"
#include "serve/process_info.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::serve {

namespace {

// What both profiles share: the target, Go's contention profile (a count and a delay per
// stack, delay first, with the labels serve's CPU profiles carry too) and how it is written.
class ContentionSampler : public Profiler {
protected:
    ContentionSampler(Context& ctx, int pid, ProfileWriter write)
        : ctx_(ctx),
          pid_(pid),
          write_(std::move(write)),
          printer_(ctx.symbolizer(), true, true),
          pprof_(printer_, kind()) {
        const ProcessInfo info = describe_process(pid);
        pprof_.label("executable", info.exe);
        if (!info.build_id.empty()) pprof_.label("build_id", info.build_id);
        pprof_.builder().default_sample_type("delay");
    }

    void write_profile() {
        if (!perf::task_alive(pid_))
            pprof_.builder().comment("process " + std::to_string(pid_) + " exited during the profile");
        write_(pprof_.gzipped());
    }

    Context& ctx_;
    int pid_;
    ProfileWriter write_;
    stack::Printer printer_;
    stack::PprofStacks pprof_;

private:
    static stack::PprofStacks::Kind kind() {
        stack::PprofStacks::Kind k;
        k.values = {{"contentions", "count"}, {"delay", "nanoseconds"}};
        k.period_type = {"contentions", "count"};
        k.period = 1;
        return k;
    }
};

class BlockSampler final : public ContentionSampler {
public:
    BlockSampler(Context& ctx, int pid, ProfileWriter write)
        : ContentionSampler(ctx, pid, std::move(write)), off_({}, [this](const sched::OffCpu::Wait& w) {
              if (w.state == "R") return;  // preempted: not blocked
              pprof_.add_weighted(w.chain.data(), w.chain.size(), w.pid, ctx_.comm(w.pid), 1, w.ns);
          }) {}

    EventPlan plan() override {
        sched::SwitchEvent e = sched::switch_event(ctx_.tep(), PERF_SAMPLE_TID | PERF_SAMPLE_TIME, true, true,
                                                   ctx_.options().dwarf_stack);
        prev_state_ = e.prev_state;
        EventPlan p;
        p.events.push_back(std::move(e.spec));
        p.inherit = true;  // the threads the target creates while it is profiled
        p.order = true;    // a thread leaves one CPU's ring and comes back in another's
        p.pages = 64;
        p.per_event_wakeup = false;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        off_.switched_out(s, uint64_t(prev_state_.read_or(s.raw, s.raw_size, 0)));
    }
    void context_switch(const ContextSwitch& c) noexcept override {
        if (!c.out) off_.switched_in(c.tid, c.time);
    }
    void lost(const LostRange&) noexcept override { off_.clear(); }

    void finish() override {
        off_.finish(ctx_.now());
        write_profile();
    }

private:
    sched::OffCpu off_;
    filter::RecordField prev_state_;
};

// Go's mutex profile: each contended wait whose release was seen, counted on the releaser's
// stack (where the holder unlocked) with the time the waiter lost.
class MutexSampler final : public ContentionSampler, public lock::Sink {
public:
    MutexSampler(Context& ctx, int pid, ProfileWriter write)
        : ContentionSampler(ctx, pid, std::move(write)), waits_(*this) {}

    EventPlan plan() override {
        EventPlan p;
        events_.plan(ctx_.tep(), p, true, true, true, ctx_.options().dwarf_stack);
        p.inherit = true;  // the threads the target creates while it is profiled
        return p;
    }

    void sample(const Sample& s) noexcept override { events_.feed(s, waits_, &ids_, &printer_); }
    void lost(const LostRange&) noexcept override { waits_.clear(); }

    void wait(const lock::Wait& w) noexcept override {
        if (!w.waker_known || !ids_.valid(w.waker_stack)) return;  // timed out, interrupted: no unlock
        const auto ips = ids_.ips(w.waker_stack);
        const uint32_t pid = ids_.pid(w.waker_stack);
        pprof_.add_weighted(ips.data(), ips.size(), pid, ctx_.comm(pid), 1, w.ns());
    }
    void retry(uint32_t, uint32_t, uint64_t, uint32_t) noexcept override {}

    void finish() override { write_profile(); }

private:
    lock::FutexEvents events_;
    lock::FutexWaits waits_;
    lock::StackIds ids_;
};

}  // namespace

std::unique_ptr<Profiler> mutex_sampler(Context& ctx, int pid, ProfileWriter write) {
    return std::make_unique<MutexSampler>(ctx, pid, std::move(write));
}

std::unique_ptr<Profiler> block_sampler(Context& ctx, int pid, ProfileWriter write) {
    return std::make_unique<BlockSampler>(ctx, pid, std::move(write));
}

}  // namespace perfprof::serve
