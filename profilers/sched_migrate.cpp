// sched-migrate: task migrations, and how many stay within the same L2 / last-level cache;
// with --detail the ones leaving the LLC, with their stacks or into a flame graph (SPEC §P19).
#include <cstdio>
#include <memory>
#include <string>

#include "core/time.h"
#include "event/tracepoint.h"
#include "filter/record_field.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "sched/cache_topology.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

struct MigrateOptions final : ProfilerOptions {
    bool detail = false;
};

using Own = OwnOptions<MigrateOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "detail", "", ArgKind::OptionalValue, false, Group::Profiler,
             "print the migrations that leave the LLC",
             [](MigrateOptions& o, OptionValue v) {
                 // the same option as multi-trace's --detail[=LIST]: here a flag
                 if (v)
                     throw Error::usage("option `detail' takes no value here, got '" + std::string(*v) + "'");
                 o.detail = true;
             }),
};

class SchedMigrate final : public Profiler {
public:
    explicit SchedMigrate(Context& ctx) : ctx_(ctx), own_(ctx.options().own_as<MigrateOptions>()) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        topo_ = sched::CacheTopology::read("/sys");
        EventSpec ev =
            event::sampled_tracepoint(ctx_.tep(), "sched", "sched_migrate_task",
                                      PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW);
        ev.attr.pinned = 1;
        orig_ = event::tp_field(ev.tp, "orig_cpu");
        dest_ = event::tp_field(ev.tp, "dest_cpu");
        if (opt.filter_given) ev.filter = opt.filter;
        const bool kernel = opt.kernel_callchain.value_or(true), user = opt.user_callchain.value_or(false);
        if (opt.call_graph) {
            if (!kernel && !user)
                throw Error::usage("sched-migrate: -g with --no-kernel-callchain records no frame");
            unwind::request_stacks(ev.attr, kernel, user, opt.dwarf_stack);
        }
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "sched-migrate",
                              .stacks = opt.call_graph,
                              .kernel = kernel,
                              .user = user,
                              .flame_count = "migrations",
                              .pprof_kind = {"migrations", "count"}})
            .move_to(printer_, flame_, pprof_);
        EventPlan p;
        p.events.push_back(std::move(ev));
        p.pages = opt.call_graph ? 4 : 2;
        p.per_event_wakeup = false;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        const int o = int(orig_.read_or(s.raw, s.raw_size, -1)),
                  d = int(dest_.read_or(s.raw, s.raw_size, -1));
        total_++;
        if (topo_.same_l2(o, d)) l2_++;
        const bool llc = topo_.same_llc(o, d);
        if (llc) llc_++;
        if (ctx_.options().verbose >= 2 || (!llc && own_.detail)) print_event(s);
    }

    void print_event(const Sample& s) noexcept override {
        if (s.callchain && stack::count_stack(flame_.get(), pprof_.get(), s, ctx_.comm(s.pid))) return;
        line_.clear();
        output::format_event_line(ctx_, s, line_);
        if (s.callchain && printer_) printer_->print(s.callchain, s.callchain_nr, s.pid, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    void interval() override { print(); }
    void finish() override {
        print();
        if (flame_) flame_->finish();
        if (pprof_) pprof_->finish();
    }

private:
    void print() {
        std::string out;
        core::append_wall(core::realtime_now_ns(), out);
        char buf[256];
        std::snprintf(
            buf, sizeof buf, " sched-migrate total %lu, same LLC %lu hit %lu%%, same L2 %lu hit %lu%%\n",
            (unsigned long)total_, (unsigned long)llc_, (unsigned long)(total_ ? llc_ * 100 / total_ : 0),
            (unsigned long)l2_, (unsigned long)(total_ ? l2_ * 100 / total_ : 0));
        out += buf;
        std::fwrite(out.data(), 1, out.size(), ctx_.out());
        std::fflush(ctx_.out());
        total_ = llc_ = l2_ = 0;
    }

    Context& ctx_;
    const MigrateOptions& own_;
    sched::CacheTopology topo_;
    filter::RecordField orig_, dest_;
    uint64_t total_ = 0, llc_ = 0, l2_ = 0;
    std::string line_;
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
};

}  // namespace

extern const ProfilerInfo sched_migrate_info;
const ProfilerInfo sched_migrate_info = {
    .name = "sched-migrate",
    .summary = "Count task migrations and how many stay within the same L2 / LLC.",
    .usage = "[OPTION...] [--detail] [--filter FILTER] [-g [--flame-graph file]] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Every interval and at exit: the migrations (sched:sched_migrate_task), those that",
            "    stay within the last-level cache and those within the L2, with integer",
            "    percentages. The caches come from each CPU's cache/indexN/level in sysfs, not from",
            "    fixed index2/index3, and a CPU without that level shares it with none (SPEC",
            "    Recommendation). --detail prints the migrations that leave the LLC.",
            "",
            "TRACEPOINT",
            "    sched:sched_migrate_task",
            "",
            "EXAMPLES",
            "    perf-prof sched-migrate --detail",
            "    perf-prof sched-migrate -i 1000 --filter 'pid==1234'",
            "    perf-prof sched-migrate --detail -g --flame-graph migrate",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::Filter, "kernel filter on sched:sched_migrate_task"},
            {Opt::CallGraph, "stacks of the printed migrations (kernel part by default)"},
            {Opt::FlameGraph},
        },
    .create = create_profiler<SchedMigrate>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
