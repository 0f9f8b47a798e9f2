// event-care: checks the integrity of the event stream (SPEC-PROFILERS §P14): events lost
// before they reached the ring buffer (the running count, sampled with each record, grew by
// more than the period) and records out of time order within one ring. Silent when all is well.
#include <linux/perf_event.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "hw/event_care.h"
#include "hw/hw_print.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "perf/sample_copy.h"
#include "stack/stack_printer.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

class EventCare final : public Profiler {
public:
    explicit EventCare(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        std::string list;
        for (const std::string& e : opt.events)
            if (!e.empty()) list += (list.empty() ? "" : ",") + e;
        if (list.empty()) throw Error::usage("event-care: no events given (use -e EVENT,...)");
        bool kernel = false, user = false;
        if (opt.call_graph) {
            // The default half is the kernel's (SPEC §P14).
            kernel = opt.kernel_callchain.value_or(true);
            user = opt.user_callchain.value_or(false);
            if (!kernel && !user)
                throw Error::usage(
                    "event-care: -g with --no-kernel-callchain records no frame: the user part needs "
                    "--user-callchain");
            printer_ = std::make_unique<stack::Printer>(ctx_.symbolizer(), kernel, user);
        }
        EventPlan p;
        for (event::Resolved& r :
             event::resolve_event_list(list, ctx_.tep(), opt.verbose, profiler_names())) {
            if (r.item.kind == event::Kind::Profiler)
                throw Error::usage("event-care: " + r.item.sys + " is a profiler: event-care checks events");
            EventSpec ev = event::planned_event(r, false, false, false);
            perf_event_attr& a = ev.attr;
            // The READ value is the event's running count; with ID, as SPEC lays it out.
            a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                            PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ;
            a.read_format = PERF_FORMAT_ID;
            a.sample_period = 1;
            a.pinned = 1;
            if (opt.call_graph) unwind::request_stacks(a, kernel, user, opt.dwarf_stack);
            p.events.push_back(std::move(ev));
        }
        checker_ = std::make_unique<hw::EventCareChecker>(opt.call_graph);
        // SPEC says 2 pages (x2 with -g). -m sets more, as SPEC's own lines do.
        p.pages = opt.call_graph ? 4 : 2;
        p.per_event_wakeup = true;
        p.user_filter = false;  // kernel filters only
        return p;
    }

    void sample(const Sample& s) noexcept override {
        const auto v = checker_->check(s.event_index, s.instance, s.read_value, s.period, s.time,
                                       printer_ ? &s : nullptr);
        if (v.lost) {
            line_.clear();
            append_name(*s.event);
            line_ += " lost ";
            core::append_uint(line_, v.lost_events);
            line_ += " events\n";
            std::fwrite(line_.data(), 1, line_.size(), stderr);
        }
        if (!v.out_of_order) return;
        line_.clear();
        core::append_wall(core::realtime_now_ns(), line_);
        line_ += "  ";
        append_name(*s.event);
        line_ += " out-of-order ";
        core::append_uint(line_, s.time);
        line_ += " < ";
        core::append_uint(line_, v.latest);
        line_ += '\n';
        if (printer_ && v.latest_sample) {
            print_sample(v.latest_sample->sample());
            print_sample(s);
        }
        std::fwrite(line_.data(), 1, line_.size(), stderr);
    }

private:
    void append_name(const EventSpec& e) {
        line_ += e.sys;
        line_ += ':';
        line_ += e.name;
    }

    // "{WALL(ev)} {comm:>16} {tid:>6} .... [{cpu:03}] {EVTS-T}: {sys}:{name}" and its stack.
    void print_sample(const Sample& s) {
        ctx_.wall(s.time, line_);
        line_ += ' ';
        core::append_right(line_, ctx_.comm(s.tid).substr(0, 16), 16);
        line_ += ' ';
        core::append_uint(line_, s.tid, 6);
        line_ += " .... [";
        core::append_uint(line_, s.cpu == UINT32_MAX ? 0 : s.cpu, 3, '0');
        line_ += "] ";
        hw::append_evts_t(s.time, line_);
        line_ += ": ";
        if (s.event) append_name(*s.event);
        line_ += '\n';
        if (s.callchain && s.event)
            printer_->print(s.callchain, s.callchain_nr, s.pid, stack::max_stack_of(s.event->attr), line_);
    }

    Context& ctx_;
    std::unique_ptr<hw::EventCareChecker> checker_;
    std::unique_ptr<stack::Printer> printer_;  // -g
    std::string line_;
};

}  // namespace

extern const ProfilerInfo event_care_info;
const ProfilerInfo event_care_info = {
    .name = "event-care",
    .summary = "Check the event stream: events lost before the ring buffer, records out of order.",
    .usage = "[OPTION...] -e EVENT[,EVENT...] [-g]",
    .body =
        {
            "SYNOPSIS",
            "    Sample the events with their running count and check, per event and ring, that",
            "    the count grew by the sample period since the previous record; otherwise on",
            "    stderr: '{sys}:{name} lost N events'. A record earlier than the latest one of",
            "    its ring prints 'WALL  {sys}:{name} out-of-order T < LATEST', with -g both",
            "    records and their (kernel) stacks. Nothing is printed when all is well.",
            "    Unlike upstream, a failed set-up stops the run with its error.",
            "",
            "EXAMPLES",
            "    perf-prof event-care -e sched:sched_wakeup -m 64",
            "    perf-prof event-care -e 'sched:sched_wakeup//cpus=0/' -m 64 -g",
        },
    .options =
        {
            {Opt::Event},
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "print the stacks of out-of-order records (kernel part by default)"},
        },
    .create = create_profiler<EventCare>,
};

}  // namespace perfprof
