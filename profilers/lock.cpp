// lock: contention of user-space locks from the futex(2) syscall's tracepoints (issue 28): each
// wait that blocked, its lock (process, address), how long, and the release that ended it; a
// table per lock and, with -g, per waiting stack with its holders' stacks; --than prints the
// long waits as they end; --pprof writes Go's contention profile, --flame-graph the waiters'
// stacks weighted by their wait. The pairing is lib/lock/futex_waits, the table lock_report.
#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/format.h"
#include "core/parse.h"
#include "core/time.h"
#include "filter/record_field.h"
#include "lock/futex_events.h"
#include "lock/futex_waits.h"
#include "lock/lock_report.h"
#include "lock/stack_ids.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/tsc.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "sym/symbolizer.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

struct LockOptions final : ProfilerOptions {
    uint64_t than_ns = 0;  // --than TIME, 0 = not given
};

using Own = OwnOptions<LockOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "than", "TIME", ArgKind::Value, false, Group::Profiler,
             "print each wait longer than TIME (e.g. 1ms) as it ends:\n"
             "waiter, lock, duration, waker (and stacks with -g)",
             [](LockOptions& o, OptionValue v) {
                 o.than_ns = core::parse_time_ns(*v);
                 if (!o.than_ns)
                     throw Error::usage("option `than' must be above 0, got '" + std::string(*v) + "'");
             }),
};

class LockProfiler final : public Profiler, public lock::Sink, public sym::ProcessObserver {
public:
    explicit LockProfiler(Context& ctx) : ctx_(ctx), waits_(*this) {}
    ~LockProfiler() override {
        if (observing_) ctx_.symbolizer().remove_observer(this);
    }
    LockProfiler(const LockProfiler&) = delete;
    LockProfiler& operator=(const LockProfiler&) = delete;

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const LockOptions& own = opt.own_as<LockOptions>();
        stacks_ = opt.call_graph;
        const bool kernel = opt.kernel_callchain.value_or(true), user = opt.user_callchain.value_or(true);
        if (stacks_ && !kernel && !user)
            throw Error::usage(
                "lock: -g with --no-kernel-callchain and --no-user-callchain records no frame");
        tsc_khz_ = ctx_.tsc_time() ? perf::tsc_khz() : 0;
        threshold_ = own.than_ns;
        if (threshold_ && tsc_khz_) threshold_ = threshold_ / 1000 * tsc_khz_ / 1000;  // in TSC cycles

        stack::PprofStacks::Kind kind;
        kind.values = {{"contentions", "count"}, {"delay", "nanoseconds"}};
        kind.period_type = {"contentions", "count"};
        kind.period = 1;
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "lock",
                              .stacks = stacks_,
                              .kernel = kernel,
                              .user = user,
                              .flame_count = "microseconds",
                              .pprof_kind = kind})
            .move_to(printer_, flame_, pprof_);
        if (pprof_) {
            pprof_->builder().default_sample_type("delay");
            pprof_->builder().comment("perf-prof lock: futex waits that blocked, by the waiter's stack");
        }
        if (stacks_) {
            ctx_.symbolizer().add_observer(this);
            observing_ = true;
        }
        report_ = std::make_unique<lock::LockReport>(stacks_);

        EventPlan p;
        events_.plan(ctx_.tep(), p, stacks_, kernel, user, opt.dwarf_stack);
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (s.time <= ignore_until_) return;
        events_.feed(s, waits_, stacks_ ? &ids_ : nullptr, printer_.get());
    }

    void lost(const LostRange& l) noexcept override {
        // Waits and releases in the window are unknown: start over after it.
        waits_.clear();
        ignore_until_ = std::max(ignore_until_, l.end ? l.end : l.start);
    }

    void interval() override { print_report(); }

    void finish() override {
        print_report();
        if (waits_.open() && !ctx_.forwarding())
            std::fprintf(ctx_.out(), "lock: %zu waits still blocked at the end (not counted)\n",
                         waits_.open());
        if (flame_) flame_->finish();
        if (pprof_) pprof_->finish();
    }

    void sigusr1() override {
        std::string now;
        core::append_wall(core::realtime_now_ns(), now);
        std::printf("%s\nlock\n  open waits: %zu\n  stacks: %zu\n  errors: %llu\n  trimmed: %llu\n",
                    now.c_str(), waits_.open(), ids_.size(), (unsigned long long)waits_.errors(),
                    (unsigned long long)waits_.trimmed());
    }

    // The symbols of `tgid` go (exit, exec): its stacks are rendered and its pprof samples
    // added now.
    void before_forget(uint32_t tgid) override {
        for (uint32_t id = 1; id <= ids_.size(); id++)
            if (ids_.pid(id) == tgid && ids_.text(id).empty()) render_stack(id);
    }

private:
    // ---- lock::Sink ----

    void wait(const lock::Wait& w) noexcept override {
        const uint64_t len = w.ns();
        report_->add(w, len);
        if ((flame_ || pprof_) && ids_.valid(w.stack)) {
            const uint64_t ns = to_ns(len);
            if (flame_ && ns >= 500) {
                const auto ips = ids_.ips(w.stack);
                std::string_view comm = ctx_.comm(w.pid);
                if (comm == "<...>") comm = {};
                flame_->add_callchain(ips.data(), ips.size(), w.pid, comm, (ns + 500) / 1000);
            }
            if (pprof_) {
                const auto ips = ids_.ips(w.stack);
                pprof_->add_weighted(ips.data(), ips.size(), w.pid, ctx_.comm(w.pid), 1, ns);
            }
        }
        if (threshold_ && len > threshold_) print_wait(w);
    }

    void retry(uint32_t pid, uint32_t tid, uint64_t uaddr, uint32_t stack) noexcept override {
        (void)tid;
        report_->retry(pid, uaddr, stack);
    }

    uint64_t to_ns(uint64_t len) const { return tsc_khz_ ? len * 1'000'000 / tsc_khz_ : len; }
    const char* unit() const { return tsc_khz_ ? "kcyc" : "us"; }

    // ---- output ----

    void render_stack(uint32_t id) {
        std::string& t = ids_.text(id);
        const auto ips = ids_.ips(id);
        printer_->print(ips.data(), ips.size(), ids_.pid(id), t);
    }

    void append_stack(uint32_t pid, uint32_t id, std::string& out) {
        (void)pid;
        if (!printer_) return;
        if (!ids_.valid(id)) {
            out += "    [no stack]\n";
            return;
        }
        if (ids_.text(id).empty()) render_stack(id);
        out += ids_.text(id);
    }

    lock::LockReport::Names names() {
        return {[this](uint32_t tid) { return ctx_.comm(tid); },
                [this](uint32_t pid, uint32_t id, std::string& out) { append_stack(pid, id, out); }};
    }

    void print_report() {
        if (ctx_.forwarding() || report_->empty()) return;
        std::string wall;
        core::append_wall(core::realtime_now_ns(), wall);
        line_.clear();
        report_->render(wall, unit(), names(), line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    // SPEC-like --than block: the wait's line, the waiter's stack, the releaser's.
    void print_wait(const lock::Wait& w) {
        line_.clear();
        ctx_.wall(w.end, line_);
        char buf[256];
        const std::string comm(ctx_.comm(w.tid)), pcomm(ctx_.comm(w.pid));
        std::snprintf(buf, sizeof buf, "  lock: %u %s waited %.3f %s on 0x%llx (%u %s)", w.tid, comm.c_str(),
                      double(w.ns()) / 1000.0, unit(), (unsigned long long)w.uaddr, w.pid, pcomm.c_str());
        line_ += buf;
        if (w.how == lock::End::TimedOut) {
            line_ += ", timed out\n";
        } else if (w.how == lock::End::Interrupted) {
            line_ += ", interrupted\n";
        } else if (!w.waker_known) {
            line_ += ", no release seen\n";
        } else {
            const std::string wcomm(ctx_.comm(w.waker_tid));
            std::snprintf(buf, sizeof buf, ", woken by %u %s", w.waker_tid, wcomm.c_str());
            line_ += buf;
            if (w.woken_on != w.uaddr) {
                std::snprintf(buf, sizeof buf, " on 0x%llx (requeued)", (unsigned long long)w.woken_on);
                line_ += buf;
            }
            line_ += '\n';
        }
        if (printer_) {
            append_stack(w.pid, w.stack, line_);
            if (w.waker_known) {
                line_ += "  released at:\n";
                append_stack(w.pid, w.waker_stack, line_);
            }
        }
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    Context& ctx_;
    lock::FutexWaits waits_;
    std::unique_ptr<lock::LockReport> report_;
    lock::StackIds ids_;
    lock::FutexEvents events_;
    bool stacks_ = false, observing_ = false;
    uint64_t threshold_ = 0, tsc_khz_ = 0;
    uint64_t ignore_until_ = 0;  // end of the last loss window
    std::string line_;
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
};

}  // namespace

extern const ProfilerInfo lock_info;
const ProfilerInfo lock_info = {
    .name = "lock",
    .summary = "Contention of user-space locks (futex waits): who waited, how long, who released.",
    .usage = "[OPTION...] [--than TIME] [-g [--flame-graph file] [--pprof file]] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Every futex(2) wait that blocked (pthread mutexes, rwlocks, condition",
            "    variables, semaphores, C++ std::mutex, PI mutexes: whatever sleeps through",
            "    futex) from the syscall's tracepoints: its lock (process and address), how",
            "    long it blocked, and the release (FUTEX_WAKE, UNLOCK_PI, a requeue) that",
            "    ended it. A table per lock at each -i tick and at exit: waits, timeouts,",
            "    interrupted waits, retries (the word changed before sleeping: EAGAIN), total,",
            "    mean, p50, p99 and max wait; with -g per waiting stack, with the stacks of the",
            "    releases that ended its waits (the holders). --pprof writes Go's contention",
            "    profile (contentions/count, delay/nanoseconds) of the waiting stacks;",
            "    --flame-graph the waiting stacks weighted by microseconds of wait.",
            "    Spinlocks that never sleep, io_uring futex operations, the futex_wait(2),",
            "    futex_wake(2) and futex_waitv(2) syscalls and kernel locks are not seen.",
            "",
            "TRACEPOINT",
            "    syscalls:sys_enter_futex, syscalls:sys_exit_futex",
            "",
            "EXAMPLES",
            "    perf-prof lock -p 1234 -i 1000",
            "    perf-prof lock -g --than 10ms -- ./server",
            "    perf-prof lock -g --pprof lock.pb.gz -p 1234   # go tool pprof -top lock.pb.gz",
            "    perf-prof lock -g --flame-graph lock -p 1234",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "record the stacks of the waits and of the releases"},
            {Opt::FlameGraph,
             "the waiting stacks (implies -g) weighted by microseconds\n"
             "of wait into file.folded and file.svg (\"\" = stdout)"},
            {Opt::Pprof,
             "Go's contention profile of the waiting stacks (implies -g)\n"
             "(contentions/count, delay/nanoseconds), gzipped"},
        },
    .create = create_profiler<LockProfiler>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
