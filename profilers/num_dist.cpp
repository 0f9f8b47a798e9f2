// num-dist: count, total, min, avg, p99 and max of a numeric expression (num=) per event,
// optionally per instance, with threshold printing and a heat map (SPEC-PROFILERS §P11). This
// file plans the events and compiles num=; the nodes and their table are lib/aggregate's.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "aggregate/dist_table.h"
#include "core/parse.h"
#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "output/event_line.h"
#include "output/heatmap_file.h"
#include "output/template_options.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"

namespace perfprof {

namespace {

struct NumDistOptions final : ProfilerOptions {
    uint64_t than = 0;    // --than: parsed as TIME even though num= need not be a time (§P11)
    std::string heatmap;  // --heatmap FILE
};

using Own = OwnOptions<NumDistOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "than", "N", ArgKind::Value, false, Group::Profiler,
             "print the events whose value is above N (read as a TIME:\n"
             "a plain number as is, 10us = 10000)",
             [](NumDistOptions& o, OptionValue v) { o.than = core::parse_time_ns(*v); }),
    Own::row(0, "heatmap", "FILE", ArgKind::Value, false, Group::Profiler,
             "append \"{time_ns} {value}\" of every event to FILE-EVENT.lat\n"
             "and draw FILE-EVENT.svg at exit",
             [](NumDistOptions& o, OptionValue v) {
                 if (v->empty()) throw Error::usage("option `heatmap' needs a file name");
                 o.heatmap = std::string(*v);
             }),
};

class NumDistProfiler final : public Profiler {
public:
    explicit NumDistProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const NumDistOptions& own = opt.own_as<NumDistOptions>();
        const std::string list =
            opt.events.empty() ? std::string() : opt.events.front();  // the first -e only
        if (list.empty())
            throw Error::usage("monitor(num-dist) init failed: no events given (use -e EVENT,...)");
        std::vector<event::Resolved> real;
        for (event::Resolved& r : event::resolve_event_list(list, ctx_.tep(), opt.verbose, profiler_names()))
            if (r.item.kind != event::Kind::Profiler) real.push_back(std::move(r));
        size_t with_num = 0;
        for (const event::Resolved& r : real) with_num += !r.item.attrs.num.empty();
        if (!with_num) throw Error::usage("Please use the multi-trace profiler");
        if (with_num != real.size())
            throw Error::usage("The number of 'num' attr is not equal to the number of event");

        EventPlan p;
        std::vector<std::string> names;
        bool stacks = false;
        for (const event::Resolved& r : real) {
            const bool stack = opt.call_graph || r.item.attrs.stack;
            // Kernel stacks by default (§P11); --user-callchain adds the user half.
            EventSpec ev = event::planned_event(r, stack, opt.user_callchain.value_or(false),
                                                opt.kernel_callchain.value_or(true), opt.dwarf_stack);
            Ev e;
            e.num = event::compile_attr(r, "num", r.item.attrs.num);
            // Recommendation of §P11: a stack is printed only for an event that records one.
            e.stack = stack;
            e.max_stack = stack::max_stack_of(ev.attr);
            if (!own.heatmap.empty())
                e.heatmap = std::make_unique<output::HeatmapFile>(
                    own.heatmap + "-" + r.item.name, "num-dist: " + r.item.sys + ":" + r.item.name);
            names.push_back(r.item.attrs.alias.empty() ? r.item.name : r.item.attrs.alias);
            evs_.push_back(std::move(e));
            stacks |= stack;
            p.events.push_back(std::move(ev));
        }
        using Per = aggregate::DistTable::PerInstance;
        const Per per = !opt.perins ? Per::No : ctx_.threads().empty() ? Per::Cpu : Per::Thread;
        table_ = std::make_unique<aggregate::DistTable>(std::move(names), per);
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "num-dist",
                              .stacks = stacks,
                              .kernel = opt.kernel_callchain.value_or(true),
                              .user = opt.user_callchain.value_or(false),
                              .flame = false})
            .move_to(printer_, flame_, pprof_);

        // §P11: 64 pages (×2 with stacks), woken at a third of the ring; --watermark decides.
        p.pages = stacks ? 128 : 64;
        p.per_event_wakeup = false;
        const uint64_t pages = uint64_t(opt.mmap_pages.value_or(p.pages));
        for (EventSpec& ev : p.events) {
            ev.attr.watermark = 1;
            ev.attr.wakeup_watermark = uint32_t(pages * 4096 / 3);
        }
        p.user_filter = true;
        than_ = own.than;
        verbose_ = opt.verbose;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (s.event_index < 0 || size_t(s.event_index) >= evs_.size()) return;
        Ev& e = evs_[size_t(s.event_index)];
        const int64_t n = e.num->eval(filter::sample_context(s, ctx_.eval_hooks(), ctx_.out()));
        const uint64_t v = n == -1 ? 0 : uint64_t(n);
        table_->add(s.instance, label(s), s.event_index, v, than_);
        if (e.heatmap) e.heatmap->write(s.time, v);
        if ((than_ && v > than_) || verbose_ >= 2) print_sample(e, s);
    }

    void interval() override { print(); }

    void finish() override {
        print();
        for (Ev& e : evs_)
            if (e.heatmap) e.heatmap->close();
    }

private:
    struct Ev {
        std::unique_ptr<filter::Program> num;
        bool stack = false;
        int max_stack = stack::kMaxStack;
        std::unique_ptr<output::HeatmapFile> heatmap;  // --heatmap
    };

    // The instance column: the CPU, or the thread a per-thread ring belongs to.
    uint32_t label(const Sample& s) const {
        const std::vector<int>& th = ctx_.threads();
        if (th.empty()) return s.cpu;
        return s.instance >= 0 && size_t(s.instance) < th.size() ? uint32_t(th[size_t(s.instance)]) : s.tid;
    }

    void print_sample(const Ev& e, const Sample& s) noexcept {
        line_.clear();
        output::format_event_line(ctx_, s, line_);
        if (e.stack && s.callchain && printer_)
            printer_->print(s.callchain, s.callchain_nr, s.pid, e.max_stack, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    void print() {
        if (!table_ || table_->empty()) return;
        std::string wall;
        core::append_wall(core::realtime_now_ns(), wall);
        table_->print(ctx_.out(), wall);
    }

    Context& ctx_;
    std::vector<Ev> evs_;  // by event index
    std::unique_ptr<aggregate::DistTable> table_;
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;  // never made (flame = false): stack_outputs' shape
    std::unique_ptr<stack::PprofStacks> pprof_;
    uint64_t than_ = 0;
    int verbose_ = 0;
    std::string line_;
};

// SPEC §P0 "help word": a num-dist command line with the given events and options.
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    const NumDistOptions& own = opt.own_as<NumDistOptions>();
    std::string t = "perf-prof num-dist -e \"";
    bool first = true;
    for (const event::Resolved& r : events) {
        if (r.item.kind == event::Kind::Profiler) continue;
        if (!first) t += ',';
        first = false;
        const event::Attrs& a = r.item.attrs;
        t += r.item.sys + ":" + r.item.name + "/" + (r.item.filter.empty() ? "." : r.item.filter) + "/";
        t += "num=" + (a.num.empty() ? "." : a.num) + "/";
        if (!a.alias.empty()) t += "alias=" + a.alias + "/";
        if (a.stack) t += "stack/";
        if (a.alias.empty()) t += "[alias=./]";
        if (!a.stack && !opt.call_graph) t += "[stack/]";
    }
    output::TemplateOptions o;
    o.flag(opt.call_graph, "-g");
    o.flag(opt.perins, "--perins");
    o.value(own.than != 0, "--than", std::to_string(own.than));
    o.value(!own.heatmap.empty(), "--heatmap", own.heatmap);
    o.attach(opt);
    return t + "\" " + o.text() + "\n";
}

}  // namespace

extern const ProfilerInfo num_dist_info;
const ProfilerInfo num_dist_info = {
    .name = "num-dist",
    .summary = "Distribution of a number per event: calls, total, min, avg, p99, max.",
    .usage = "-e EVENT[,EVENT...] [--perins] [--than N] [--heatmap FILE] [-g] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Every event needs num=EXPR, the value whose distribution is built (a result of",
            "    -1 counts as 0). The table is printed at exit, and every -i ms if given; with",
            "    --perins one row per CPU (or thread) and event.",
            "",
            "    EVENT: sys:name[/filter/ATTR/ATTR/.../]",
            "    ATTR: num=EXPR, alias=NAME (the row's name), stack, max-stack=N",
            "    --than N prints the events above N, with their stacks where the event records",
            "    one (-g, or its stack attribute; never another event's). p99 is truncated to an",
            "    integer; the event column is at least 5 wide.",
            "",
            "EXAMPLES",
            "    perf-prof num-dist -e 'sched:sched_stat_runtime//num=runtime/' -i 1000",
            "    perf-prof num-dist -e 'sched:sched_stat_runtime//num=\"runtime/1000\"/alias=runtime(us)/'",
            "    perf-prof num-dist -e 'syscalls:sys_enter_write//num=count/' --than 65536 -g -- make",
            "    perf-prof num-dist -e 'sched:sched_stat_runtime//num=runtime/' --heatmap rt",
            "    perf-prof num-dist -e 'syscalls:sys_enter_write//num=count/' help   # command template",
        },
    .options =
        {
            {Opt::Event, "events, each with num=EXPR (the first -e only)"},
            {Opt::UserCallchain, "user stacks too (kernel stacks by default)"},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "record the kernel call stack of every event"},
            {Opt::Perins, "one row per instance (CPU or thread) and event"},
        },
    .create = create_profiler<NumDistProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
