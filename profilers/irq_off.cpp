// irq-off: a per-CPU hrtimer whose late expirations reveal interrupts-off intervals
// (SPEC-PROFILERS §P16).
#include <memory>
#include <string>
#include <vector>

#include "core/parse.h"
#include "counters/group_plan.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "unwind/call_graph.h"

namespace perfprof {
namespace {

struct IrqOffOptions final : ProfilerOptions {
    uint64_t period_ns = 0, than_ns = 0;
    bool exclude_user = false, exclude_kernel = false, exclude_guest = false;
};

using Own = OwnOptions<IrqOffOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "period", "TIME", ArgKind::Value, false, Group::Profiler, "hrtimer period (required)",
             [](IrqOffOptions& o, OptionValue v) {
                 o.period_ns = core::parse_time_ns(*v);
                 if (!o.period_ns) throw Error::usage("--period must be greater than 0");
             }),
    Own::row(0, "than", "TIME", ArgKind::Value, false, Group::Profiler,
             "print the samples whose timer delta is above TIME",
             [](IrqOffOptions& o, OptionValue v) { o.than_ns = core::parse_time_ns(*v); }),
    Own::row(0, "exclude-user", "", ArgKind::Flag, false, Group::Filter, "exclude user",
             [](IrqOffOptions& o, OptionValue v) { o.exclude_user = flag_value(v); }),
    Own::row(0, "exclude-kernel", "", ArgKind::Flag, false, Group::Filter, "exclude kernel",
             [](IrqOffOptions& o, OptionValue v) { o.exclude_kernel = flag_value(v); }),
    Own::row(0, "exclude-guest", "", ArgKind::Flag, false, Group::Filter, "exclude guest",
             [](IrqOffOptions& o, OptionValue v) { o.exclude_guest = flag_value(v); }),
};

class IrqOff final : public Profiler {
public:
    explicit IrqOff(Context& ctx) : ctx_(ctx), own_(ctx.options().own_as<IrqOffOptions>()) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        if (!own_.period_ns) throw Error::usage("monitor(irq-off) init failed: --period is required");
        if (own_.period_ns < 100000) throw Error::usage("irq-off: --period must be at least 100us");
        if (!opt.pids.empty() || !opt.tids.empty()) throw Error("irq-off can only be attached to cpu.");
        if (own_.exclude_user && own_.exclude_kernel)
            throw Error::usage("--exclude-user and --exclude-kernel leave nothing to sample");
        EventSpec ev = counters::clock_leader(own_.period_ns, 0);
        ev.attr.read_format = 0;
        ev.attr.exclude_user = own_.exclude_user;
        ev.attr.exclude_kernel = own_.exclude_kernel;
        ev.attr.exclude_guest = own_.exclude_guest;
        const bool stacks = opt.call_graph && own_.than_ns;
        const bool kernel = opt.kernel_callchain.value_or(true), user = opt.user_callchain.value_or(false);
        if (stacks) unwind::request_stacks(ev.attr, kernel, user, opt.dwarf_stack);
        ev.attr.watermark = 1;
        EventPlan p;
        p.pages = stacks ? 4 : 2;
        ev.attr.wakeup_watermark = uint32_t(p.pages) * 4096 / 2;
        p.events.push_back(std::move(ev));
        stack::stack_outputs(
            opt, ctx_.symbolizer(),
            {.profiler = "irq-off", .stacks = stacks, .kernel = kernel, .user = user, .flame = false})
            .move_to(printer_, flame_, pprof_);
        return p;
    }

    void sample(const Sample& s) noexcept override {
        const size_t i = size_t(std::max(s.instance, 0));
        if (i >= prev_.size()) prev_.resize(i + 1, UINT64_MAX);
        const uint64_t prev = prev_[i];
        prev_[i] = s.read_value;
        // The first sample of a CPU measures from enabling: ignored (Recommendation of §P16).
        if (prev == UINT64_MAX || !own_.than_ns) return;
        const uint64_t delta = s.read_value > prev ? s.read_value - prev : 0;
        if (delta <= own_.than_ns) return;
        line_.clear();
        counters::append_timer_line(ctx_, s, "irq-off", delta, line_);
        if (s.callchain && printer_)
            printer_->print(s.callchain, s.callchain_nr, s.pid, stack::max_stack_of(s.event->attr), line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

private:
    Context& ctx_;
    const IrqOffOptions& own_;
    std::vector<uint64_t> prev_;
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    std::string line_;
};

}  // namespace

extern const ProfilerInfo irq_off_info;
const ProfilerInfo irq_off_info = {
    .name = "irq-off",
    .summary = "Detect interrupts-off intervals with a per-CPU hrtimer.",
    .usage = "[OPTION...] --period TIME [--than TIME] [-g] [[--] <command>]",
    .body = {"SYNOPSIS", "    A cpu-clock timer fires every --period on every CPU; when the time measured",
             "    between two expirations is above --than, the timer was held off (typically",
             "    by interrupts disabled) and the sample is printed, with the interrupted stack",
             "    with -g. The first sample of each CPU (measured from enabling) is ignored, as",
             "    the specification recommends. Without --than nothing is printed.", "", "EXAMPLES",
             "    perf-prof irq-off --period 10ms --than 20ms -g"},
    .options = {{Opt::UserCallchain},
                {Opt::KernelCallchain},
                {Opt::CallGraph, "print the interrupted stack"}},
    .create = create_profiler<IrqOff>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
