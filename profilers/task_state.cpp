// task-state: where every task's time goes — running (R), sleeping (S, D, I), stopped (T, t)
// and waiting for a CPU after a wake-up or a preemption (RD) — from the scheduler tracepoints,
// with the long waits shown as they end (SPEC §4.4).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/parse.h"
#include "core/time.h"
#include "event/resolve.h"
#include "event/tracepoint.h"
#include "filter/record_field.h"
#include "filter/task_filter.h"
#include "output/event_line.h"
#include "output/timeline.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/proc_tasks.h"
#include "perf/sample_copy.h"
#include "perf/tsc.h"
#include "sched/roles.h"
#include "sched/state_table.h"
#include "sched/task_states.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

// ---- options only task-state takes (SPEC §4.4.3) ----

struct TaskStateOptions final : ProfilerOptions {
    std::optional<bool> interruptible;  // -S / --no-interruptible: the last one wins
    bool uninterruptible = false;       // -D
    uint64_t than_ns = 0;               // --than TIME, 0 = not given
};

using Own = OwnOptions<TaskStateOptions>;
const OptionRow kOwnOptions[] = {
    Own::row('S', "interruptible", "", ArgKind::Flag, true, Group::Profiler,
             "measure only S sleeps (interruptible); with -D both;\n"
             "--no-interruptible: leave S out of the table",
             [](TaskStateOptions& o, OptionValue v) { o.interruptible = flag_value(v); }),
    Own::row('D', "uninterruptible", "", ArgKind::Flag, false, Group::Profiler,
             "measure only D sleeps (uninterruptible); with -S both",
             [](TaskStateOptions& o, OptionValue v) { o.uninterruptible = flag_value(v); }),
    Own::row(0, "than", "TIME", ArgKind::Value, false, Group::Profiler,
             "print each wait and run delay longer than TIME\n"
             "(e.g. 10ms) with the events that began and ended it",
             [](TaskStateOptions& o, OptionValue v) {
                 o.than_ns = core::parse_time_ns(*v);
                 if (!o.than_ns)
                     throw Error::usage("option `than' must be above 0, got '" + std::string(*v) + "'");
             }),
};

using sched::Role;

class TaskStateProfiler final : public Profiler, public sched::Sink {
public:
    explicit TaskStateProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const TaskStateOptions& own = opt.own_as<TaskStateOptions>();
        by_name_ = opt.filter_given;
        sel_ = {own.interruptible, own.uninterruptible, by_name_ || !ctx_.threads().empty()};
        table_ = std::make_unique<sched::StateTable>(opt.perins);
        verbose_ = opt.verbose;
        threshold_ = own.than_ns;
        if (threshold_ && ctx_.tsc_time()) {
            // Intervals are TSC cycles then: the threshold too.
            const uint64_t khz = perf::tsc_khz();
            if (khz) threshold_ = threshold_ / 1000 * khz / 1000;
        }

        call_graph_ = opt.call_graph;
        timeline_ = output::timeline_from_options(opt);
        if (timeline_) tracks_ = std::make_unique<output::TimelineTracks>(*timeline_, ctx_, perf::tgid_of);
        tep::Tep& tep = ctx_.tep();
        tep_event* sw = tep.event("sched", "sched_switch");
        tep_event* wk = tep.event("sched", "sched_wakeup");
        fields_ = {event::tp_field(sw, "prev_pid"), event::tp_field(sw, "prev_state"),
                   event::tp_field(sw, "next_pid"), event::tp_field(wk, "pid")};

        // The events of the mode (SPEC §4.4.2), each selecting the tasks by kernel filter.
        EventPlan p;
        state_ = sel_.state_filter();
        for (Role r : sel_.roles()) add(p, tep, r);
        states_ = std::make_unique<sched::TaskStates>(
            sched::TaskStates::Config{sel_.sleeps_only(), sel_.reportable(), threshold_ != 0 || timeline_,
                                      timeline_ != nullptr},
            *this);
        for (size_t e = 0; e < p.events.size(); e++)
            p.events[e].filter = sched::role_filter(
                roles_[e], sel_, state_, [this](const std::string& side) { return select_named(side); });
        if (opt.verbose > 0)
            for (const EventSpec& e : p.events)
                if (!e.filter.empty())
                    std::printf("%s:%s filter \"%s\"\n", e.sys.c_str(), e.name.c_str(), e.filter.c_str());

        if (opt.call_graph) {
            const bool kernel = opt.kernel_callchain.value_or(true), user = opt.user_callchain.value_or(true);
            for (EventSpec& e : p.events) {
                unwind::request_stacks(e.attr, kernel, user, opt.dwarf_stack);
            }
        }
        // The same stacks as the flame graph's: those of the printed events.
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "task-state",
                              .stacks = opt.call_graph,
                              .kernel = opt.kernel_callchain.value_or(true),
                              .user = opt.user_callchain.value_or(true),
                              .flame_count = "events",
                              .pprof_kind = {"events", "count"}})
            .move_to(printer_, flame_, pprof_);
        // 512 KiB a CPU (1 MiB with stacks), woken at half: a 300k switches/s storm is read
        // without loss, and one of 1.2M sched events/s on one CPU mostly (SPEC's 8 pages lose
        // events under either).
        p.pages = opt.call_graph ? 256 : 128;
        p.per_event_wakeup = false;
        p.order = true;  // a wake-up and the switch-in it leads to are on different CPUs
        // Scheduler events of the attached tasks happen on every CPU: watch all of them and
        // keep the tasks by filter (SPEC §4.4.2); follow new ones unless names select them.
        p.system_wide = true;
        p.follow = (opt.ptrace || inherits(opt)) && !by_name_;
        return p;
    }

    // The filters of each event for tasks followed later (they get events of their own).
    std::vector<std::string> filters_for(const std::vector<int>& tids) override {
        if (by_name_ || !sel_.filtered) return {};
        std::vector<std::string> f;
        for (Role r : roles_)
            f.push_back(sched::role_filter(r, sel_, state_, [&](const std::string& side) {
                return filter::pid_filter(tids, side + "pid");
            }));
        return f;
    }

    void sample(const Sample& s) noexcept override {
        if (verbose_ > 1) print_line(s);
        consume(s);
    }

    // Nested (SPEC §2.8): the parent hands our events back. With --than we show the long
    // waits they end; otherwise the events themselves.
    void print_event(const Sample& s) noexcept override {
        if (threshold_)
            consume(s);
        else
            print_line(s);
    }

    void lost(const LostRange& l) noexcept override {
        // State is unknown across a loss: start over after it (SPEC §4.4.6).
        states_->clear();
        ignore_until_ = std::max(ignore_until_, l.end ? l.end : l.start);
    }

    void interval() override {
        if (!ctx_.forwarding()) print_table();
    }

    void finish() override {
        if (!ctx_.forwarding()) print_table();
        if (flame_) flame_->finish();
        if (pprof_) pprof_->finish();
        if (timeline_) timeline_->close();
    }

    void sigusr1() override {
        std::string now;
        core::append_wall(core::realtime_now_ns(), now);
        std::printf("%s\ntask-state\n  copied: %llu\n  freed: %llu\n  mem_bytes: %zu\n  tasks %zu\n",
                    now.c_str(), (unsigned long long)states_->copied(), (unsigned long long)states_->freed(),
                    states_->copy_bytes(), states_->tasks());
    }

private:
    void add(EventPlan& p, tep::Tep& tep, Role role) {
        // What the state machine needs: the time and the record (pids and state are fields of
        // it; the session tells events apart by PERF_SAMPLE_IDENTIFIER and knows the CPU of a
        // per-CPU ring). Each word less is less for the kernel to write at every switch of the
        // machine; the task comes with stacks, whose user frames it resolves.
        EventSpec e = event::sampled_tracepoint(
            tep, "sched", sched::event_name(role),
            PERF_SAMPLE_TIME | PERF_SAMPLE_RAW | (call_graph_ ? PERF_SAMPLE_TID : 0));
        e.attr.pinned = 1;
        if (timeline_) e.fields = event::tracepoint_fields(*e.tp);  // the slices' args
        p.events.push_back(std::move(e));
        roles_.push_back(role);
    }

    // The tasks selected at start: --filter names win over the attached threads (SPEC §1.5.1).
    std::string select_named(const std::string& side) const {
        if (by_name_) return filter::comm_filter(ctx_.options().filter, side + "comm");
        return filter::pid_filter(ctx_.threads(), side + "pid");
    }

    void consume(const Sample& s) noexcept {
        if (s.time <= ignore_until_ || size_t(s.event_index) >= roles_.size()) return;
        // Delivered in time order (the session's Orderer raises a late one to the last time),
        // so no interval below comes out negative.
        sched::feed(*states_, roles_[size_t(s.event_index)], fields_, s);
    }

    // An interval closed: into its row, and printed with its events past --than (SPEC §4.4.4).
    void closed(uint32_t tid, int row, uint64_t ns, const perf::SampleCopy* start,
                const Sample& end) override {
        table_->add(tid, row, ns, threshold_);
        if (timeline_) slice(tid, row, ns, start, end);
        if (threshold_ && ns > threshold_ && row != sched::kR && start && start->event)
            print_block(tid, row == sched::kRD ? "RUNDELAY" : "WAIT", ns, *start, end);
    }

    // ---- output ----

    // The interval on the thread's track, named as its table row, with the events that began
    // and ended it.
    void slice(uint32_t tid, int row, uint64_t ns, const perf::SampleCopy* start, const Sample& end) {
        std::string_view name = sched::kRowName[row];
        if (name.back() == ' ') name.remove_suffix(1);
        timeline_->complete(name, tracks_->pid(tid), tid, end.time - ns, ns);
        if (start && start->event) event_arg("begin", start->sample());
        event_arg("end", end);
        timeline_->end();
    }

    void event_arg(std::string_view key, const Sample& s) {
        line_.assign(s.event->sys).append(":").append(s.event->name);
        output::append_event_arg(*timeline_, key, line_, s);
    }

    void print_line(const Sample& s) {
        line_.clear();
        output::format_event_line(ctx_, s, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
        print_stack(s);
    }

    void print_stack(const Sample& s) {
        if (!s.callchain || !printer_) return;
        if (stack::count_stack(flame_.get(), pprof_.get(), s, ctx_.comm(s.pid))) return;
        line_.clear();
        printer_->print(s.callchain, s.callchain_nr, s.pid, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    // SPEC §4.4.4: the header, then the event that began the interval and the one that ended it.
    void print_block(uint32_t tid, const char* what, uint64_t duration, const perf::SampleCopy& first,
                     const Sample& last) {
        line_.clear();
        if (!ctx_.forwarding()) {
            core::append_wall(core::realtime_now_ns(), line_);
            line_ += "  ";
        }
        line_ += "task-state: ";
        core::append_uint(line_, tid, 0);
        line_ += ' ';
        line_ += ctx_.comm(tid);
        line_ += ' ';
        line_ += what;
        line_ += ' ';
        core::append_uint(line_, duration / 1'000'000, 0);
        line_ += ctx_.tsc_time() ? " Mcyc\n" : " ms\n";
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
        print_line(first.sample());
        print_line(last);
    }

    // SPEC §4.4.5, at each -i tick and at exit; rows are reset after printing.
    void print_table() {
        line_.clear();
        if (table_->any()) {
            std::string wall;
            core::append_wall(core::realtime_now_ns(), wall);
            table_->render(
                wall, ctx_.tsc_time() ? "kcyc" : "us", [this](uint32_t tid) { return ctx_.comm(tid); },
                line_);
        }
        // Some kernels (this project's VM guest among them) do not deliver a sched record now
        // and then, with no PERF_RECORD_LOST: say how many sleeps that touched, so that the
        // table is not taken for complete.
        sched::append_missing_wakeup_notes(states_->take_closed_at_switch_in(), states_->take_unmeasured(),
                                           sel_.watches_switch_ins(), line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    Context& ctx_;
    bool by_name_ = false, call_graph_ = false;
    int verbose_ = 0;
    sched::Selection sel_;
    std::string state_;  // the prev_state filter of -S/-D, "" without them
    uint64_t threshold_ = 0;
    std::vector<Role> roles_;
    sched::SchedFields fields_;
    std::unique_ptr<sched::TaskStates> states_;
    std::unique_ptr<sched::StateTable> table_;
    uint64_t ignore_until_ = 0;  // end of the last loss window
    std::string line_;
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    std::unique_ptr<output::TimelineWriter> timeline_;
    std::unique_ptr<output::TimelineTracks> tracks_;
};

}  // namespace

extern const ProfilerInfo task_state_info;
const ProfilerInfo task_state_info = {
    .name = "task-state",
    .summary = "Where tasks spend their time: running, sleeping, waiting for a CPU.",
    .usage =
        "[OPTION...] [-S] [-D] [--than TIME] [--filter comm] [--perins] [-g [--flame-graph file] [--pprof "
        "file]]"
        " [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Account every task's time to its scheduler state from sched_switch and",
            "    sched_wakeup: R running, S and D sleeping (interruptible, uninterruptible), T",
            "    stopped, t traced, I idle, and RD runnable but waiting for a CPU after a",
            "    wake-up or a preemption. Prints a table of calls, total, min, p50, p95, p99",
            "    and max per state at each -i tick and at exit; --perins per thread.",
            "    Attached to processes or a command, every CPU is watched and the tasks are",
            "    selected by kernel filter; threads and processes they create later are",
            "    followed through ptrace (for -p and a command unless --no-inherit; for -t",
            "    with --inherit or --ptrace).",
            "",
            "TRACEPOINT",
            "    sched:sched_switch, sched:sched_wakeup, sched:sched_wakeup_new",
            "",
            "EXAMPLES",
            "    perf-prof task-state -i 1000",
            "    perf-prof task-state -S --than 100ms -g -p 1234",
            "    perf-prof task-state -D --perins --filter 'postgres*'",
            "    perf-prof task-state --perins -- make -j2",
            "    perf-prof trace -e 'task-state/-S --than 10ms/,sched:sched_wakeup' --order",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::Filter,
             "task names: comma-separated, glob patterns allowed\n"
             "(instead of -p/-t, which it overrides)"},
            {Opt::Perins, "one table row per thread and state"},
            {Opt::CallGraph,
             "record call stacks (kernel and user) of the events\n"
             "printed by --than"},
            {Opt::FlameGraph,
             "with -g and --than: count the stacks of the printed\n"
             "events into file.folded (\"\" = stdout)"},
            {Opt::Pprof,
             "with -g and --than: write the stacks of the printed\n"
             "events to file as a gzipped pprof profile.proto"},
            {Opt::Ptrace},
            {Opt::Timeline,
             "stream each state interval to file as a slice on its\n"
             "thread's track (Chrome trace-event JSON: Perfetto UI)"},
        },
    .create = create_profiler<TaskStateProfiler>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
