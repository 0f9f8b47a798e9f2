// signal: every generated signal, system-wide or for the attached tasks (SPEC §4.1).
#include <cstdio>
#include <memory>
#include <string>

#include "event/tracepoint.h"
#include "filter/task_filter.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "stack/stack_printer.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

class SignalProfiler final : public Profiler {
public:
    explicit SignalProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        EventSpec ev =
            event::sampled_tracepoint(ctx_.tep(), "signal", "signal_generate",
                                      PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW);
        ev.attr.pinned = 1;
        ev.attr.wakeup_events = 1;
        // The default half is kernel only (SPEC §4.1, §12).
        if (opt.call_graph) {
            const bool kernel = opt.kernel_callchain.value_or(true),
                       user = opt.user_callchain.value_or(false);
            if (!kernel && !user)
                throw Error::usage(
                    "signal: -g with --no-kernel-callchain records no frame: the user part needs "
                    "--user-callchain");
            unwind::request_stacks(ev.attr, kernel, user, opt.dwarf_stack);
            printer_ = std::make_unique<stack::Printer>(ctx_.symbolizer(), kernel, user);
        }
        // comm of signal_generate is the receiving task (SPEC §4.1).
        if (opt.filter_given) ev.filter = filter::comm_filter(opt.filter);
        EventPlan p;
        p.events.push_back(std::move(ev));
        // SPEC §4.1 says 2 pages; a burst of ~80 signals fills that before we are scheduled
        // on a busy 2-CPU machine. 8 pages (32 KiB per ring) costs nothing and loses nothing.
        p.pages = opt.call_graph ? 16 : 8;
        p.per_event_wakeup = true;
        return p;
    }

    void sample(const Sample& s) noexcept override { print_event(s); }

    void print_event(const Sample& s) noexcept override {
        line_.clear();
        output::format_event_line(ctx_, s, line_);
        if (s.callchain && printer_) printer_->print(s.callchain, s.callchain_nr, s.pid, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

private:
    Context& ctx_;
    std::string line_;
    std::unique_ptr<stack::Printer> printer_;  // with -g
};

}  // namespace

extern const ProfilerInfo signal_info;
const ProfilerInfo signal_info = {
    .name = "signal",
    .summary = "Demo: print every generated signal.",
    .usage = "[OPTION...] [--filter comm] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Print one line for every signal generated (signal:signal_generate), on every CPU",
            "    or for the attached processes, threads, cgroups or command. The sending task is",
            "    shown at the start of the line; comm= and pid= name the receiving task.",
            "",
            "TRACEPOINT",
            "    signal:signal_generate",
            "",
            "EXAMPLES",
            "    perf-prof signal",
            "    perf-prof signal -C 0-1 --filter 'bash,ssh*'",
            "    perf-prof signal -p 1234 -N 10",
            "    perf-prof signal -- kill -USR1 $$",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "print the call stack of the signalling code (kernel part by default)"},
            {Opt::Filter, "receiving task names: comma-separated, glob patterns allowed"},
        },
    .create = create_profiler<SignalProfiler>,
};

}  // namespace perfprof
