// trace: print tracepoint, uprobe and kprobe events, and the events of nested profilers, as
// they happen (SPEC §4.3).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "output/event_line.h"
#include "output/template_options.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "stack/timeline_samples.h"

namespace perfprof {

namespace {

// The options only trace takes.
struct TraceOptions final : ProfilerOptions {
    bool overwrite = false;  // --overwrite: write_backward rings, read at ticks and at exit
};

using Own = OwnOptions<TraceOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "overwrite", "", ArgKind::Flag, false, Group::Profiler,
             "keep only the newest events in each ring buffer;\n"
             "read them at each -i tick and at exit",
             [](TraceOptions& o, OptionValue v) { o.overwrite = flag_value(v); }),
};

class TraceProfiler final : public Profiler {
public:
    explicit TraceProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const TraceOptions& own = opt.own_as<TraceOptions>();
        const std::string list = event::joined_lists(opt);
        if (list.empty())
            throw Error::usage("monitor(trace) init failed: no events given (use -e EVENT,...)");
        EventPlan p;
        bool stacks = false;
        for (event::Resolved& r :
             event::resolve_event_list(list, ctx_.tep(), opt.verbose, profiler_names())) {
            if (r.item.kind == event::Kind::Profiler) {
                p.nested.push_back({r.item.sys, r.item.profiler_options, r.item.attrs.cpus});
                continue;
            }
            // Stacks: every event with -g, else those with stack/max-stack (SPEC §4.3); both
            // halves by default (SPEC §12).
            const bool stack = opt.call_graph || r.item.attrs.stack;
            EventSpec ev = event::planned_event(r, stack, opt.user_callchain.value_or(true),
                                                opt.kernel_callchain.value_or(true), opt.dwarf_stack);
            stacks |= stack;
            // exec= is compiled once, against this event's fields (SPEC §2.5, §2.7.7).
            std::unique_ptr<filter::Program> exec = event::compile_attr(r, "exec", r.item.attrs.exec);
            exec_.push_back(std::move(exec));
            p.events.push_back(std::move(ev));
        }
        p.pages = default_pages(stacks);
        if (!opt.mmap_pages)
            for (EventSpec& ev : p.events) {
                // Woken every quarter of the default ring: the other three quarters are the
                // slack of a late reader (default_pages). --watermark still decides.
                ev.attr.watermark = 1;
                ev.attr.wakeup_watermark = uint32_t(p.pages) * 4096 / 4;
            }
        // SPEC §5.6: the flame graph needs -g; event lines are printed either way.
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "trace",
                              .stacks = stacks,
                              .kernel = opt.kernel_callchain.value_or(true),
                              .user = opt.user_callchain.value_or(true),
                              .flame_count = "events",
                              .flame = opt.call_graph})
            .move_to(printer_, flame_, pprof_);
        if (flame_) interval_start_ = core::realtime_now_ns();
        timeline_ = stack::TimelineSamples::from_options(ctx_, printer_.get());
        // Batched wake-ups: waking per event made us trace our own context switches.
        p.per_event_wakeup = false;
        p.order = opt.order;
        p.user_filter = true;
        p.overwrite = own.overwrite;
        p.follow = opt.ptrace;
        return p;
    }

    // Ring pages when -m is not given (SPEC says 2, with per-event wake-ups), from the rate a
    // storm writes (bench/trace_bench.py): one CPU switching 300k times a second writes 36 MB/s
    // of sched_switch records (120 bytes each). With 2 MiB rings woken every quarter (512 KiB,
    // as often as the 1 MiB rings woken at half were before), three quarters, 1.5 MiB, hold
    // 40 ms of that storm, 80 ms of the bench's 320k/s over two CPUs, while the reader waits
    // for a CPU on a busy machine (the 0.5 MiB left before lost events at a load average of
    // 12). Past 8 CPUs, half that keeps the locked memory in bounds, and so does a user other
    // than root, whom the kernel lets lock only perf_event_mlock_kb per CPU plus RLIMIT_MEMLOCK.
    // Stacks make records several times larger: twice the pages.
    int default_pages(bool stacks) const {
        const int pages = ctx_.cpu_count() <= 8 && ::geteuid() == 0 ? 512 : 256;
        return stacks ? 2 * pages : pages;
    }

    void sample(const Sample& s) noexcept override {
        if (s.from) {
            s.from->print_event(s);
            return;
        }
        print_event(s);
    }

    void print_event(const Sample& s) noexcept override {
        line_.clear();
        output::format_event_line(ctx_, s, line_, ' ');
        FILE* out = ctx_.out();
        std::fwrite(line_.data(), 1, line_.size(), out);
        if (timeline_) {
            // The event as an instant on its thread's track, its fields and stack as args.
            line_.assign(s.event->sys).append(":").append(s.event->name);
            timeline_->instant(line_, s, true);
        }
        if (size_t(s.event_index) < exec_.size() && exec_[size_t(s.event_index)]) {
            exec_[size_t(s.event_index)]->eval(filter::sample_context(s, ctx_.eval_hooks(), out));
        }
        // Counted into the flame graph or pprof under its process name (SPEC §4.3), else printed.
        if (s.callchain && printer_ && !stack::count_stack(flame_.get(), pprof_.get(), s, ctx_.comm(s.pid))) {
            line_.clear();
            printer_->print(s.callchain, s.callchain_nr, s.pid, stack::max_stack_of(s.event->attr), line_);
            std::fwrite(line_.data(), 1, line_.size(), out);
        }
    }

    void interval() override {
        if (!flame_) return;
        // Each interval's stacks carry the interval's start, so `grep "14:05:"` selects it.
        flame_->flush(stack::interval_prefix(interval_start_));
        interval_start_ = core::realtime_now_ns();
    }

    void finish() override {
        if (flame_) flame_->finish(ctx_.options().interval_ms ? stack::interval_prefix(interval_start_) : "");
        if (pprof_) pprof_->finish();
        if (timeline_) timeline_->close();
    }

private:
    Context& ctx_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    int64_t interval_start_ = 0;
    std::vector<std::unique_ptr<filter::Program>> exec_;  // per event, null = no exec=
    std::unique_ptr<stack::Printer> printer_;             // when any event records stacks
    std::string line_;
    std::unique_ptr<stack::TimelineSamples> timeline_;
};

// SPEC §1.10: a command line that reproduces the given events with their filters, plus the
// options given and hints for the others.
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    std::string t = "perf-prof trace -e \"";
    bool first = true;
    for (const event::Resolved& r : events) {
        if (!first) t += ',';
        first = false;
        if (r.item.kind == event::Kind::Profiler) {
            t += r.item.text;
            continue;
        }
        t += r.item.sys + ":" + r.item.name + "/" + (r.item.filter.empty() ? "." : r.item.filter) + "/";
        if (!opt.call_graph) t += "[stack/]";
    }
    output::TemplateOptions o;
    o.flag(opt.call_graph, "-g");
    o.value(opt.flame_graph_given, "--flame-graph", opt.flame_graph.empty() ? "\"\"" : opt.flame_graph);
    if (opt.pprof_given) o.given("--pprof " + opt.pprof);  // no hint: --flame-graph's is enough
    o.attach(opt);
    o.flag(opt.order, "--order");
    o.pages(opt);
    return t + "\" " + o.text() + "\n";
}

}  // namespace

extern const ProfilerInfo trace_info;
const ProfilerInfo trace_info = {
    .name = "trace",
    .summary = "Trace events: print every tracepoint, uprobe or nested profiler event as it happens.",
    .usage = "-e EVENT[,EVENT...] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Print one line per event. Events are tracepoints (sys:name, wildcards allowed),",
            "    uprobes (uprobe:func@\"/path\" or uretprobe:...), kprobes where the kernel has a",
            "    kprobe PMU, and other profilers, whose events they print themselves.",
            "",
            "    EVENT: sys:name[/filter/ATTR/ATTR/.../]  or  profiler[/options/ATTR/.../]",
            "    filter: the kernel's ftrace filter; when the kernel refuses it (field against",
            "    field, arithmetic), it is evaluated here instead, with the same meaning.",
            "    ATTR: exec=EXPR (run after each line, e.g. printf(...)), cpus=LIST, stack, ...",
            "    Wrap filters and values containing '/' or ',' in parentheses or quotes.",
            "",
            "EXAMPLES",
            "    perf-prof trace -e sched:sched_wakeup -C 0",
            "    perf-prof trace -e 'syscalls:sys_enter_read/fd==0/' -p 1234",
            "    perf-prof trace -e 'sched:sched_switch/prev_prio<next_prio/' --order",
            "    perf-prof trace -e 'uprobe:malloc@\"/lib/x86_64-linux-gnu/libc.so.6\"' -N 10",
            "    perf-prof trace -e 'sched:sched_process_exec//exec=printf(\"%d\\n\",pid)/,signal'",
            "    perf-prof trace -e 'irq:softirq_*' -- make",
            "    perf-prof trace -e syscalls:sys_enter_write -g --pprof write.pb.gz -- make",
            "    perf-prof trace -e sched:sched_wakeup help     # command template and format",
        },
    .options =
        {
            {Opt::Event, "event selector: tracepoints, probes, nested profilers"},
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "record call stacks of every event (or per event: the stack attribute)"},
            {Opt::FlameGraph},
            {Opt::Pprof},
            {Opt::Ptrace},
            {Opt::Timeline,
             "stream each event to file as an instant on its thread's\n"
             "track, fields and stack as args (Chrome trace-event JSON)"},
        },
    .create = create_profiler<TraceProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
