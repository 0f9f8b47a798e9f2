// hrtimer: a per-CPU timer reading a group of counters, printing the samples where an
// expression over the counts is true (SPEC-PROFILERS §P15).
#include <memory>
#include <string>
#include <vector>

#include "core/parse.h"
#include "counters/count_expr.h"
#include "counters/group_plan.h"
#include "counters/series.h"
#include "event/resolve.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf-prof/read_values.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "unwind/call_graph.h"

namespace perfprof {
namespace {

struct HrtimerOptions final : ProfilerOptions {
    uint64_t period_ns = 0, freq = 0;
    bool exclude_user = false, exclude_kernel = false, exclude_guest = false;
};

using Own = OwnOptions<HrtimerOptions>;
const OptionRow kOwnOptions[] = {
    Own::row('F', "freq", "HZ", ArgKind::Value, false, Group::Profiler, "timer frequency (or --period)",
             [](HrtimerOptions& o, OptionValue v) { o.freq = core::parse_bounded(*v, "freq", 100000); }),
    Own::row(0, "period", "TIME", ArgKind::Value, false, Group::Profiler, "timer period (or -F)",
             [](HrtimerOptions& o, OptionValue v) {
                 o.period_ns = core::parse_time_ns(*v);
                 if (!o.period_ns) throw Error::usage("--period must be greater than 0");
             }),
    Own::row(0, "exclude-user", "", ArgKind::Flag, false, Group::Filter, "exclude user",
             [](HrtimerOptions& o, OptionValue v) { o.exclude_user = flag_value(v); }),
    Own::row(0, "exclude-kernel", "", ArgKind::Flag, false, Group::Filter, "exclude kernel",
             [](HrtimerOptions& o, OptionValue v) { o.exclude_kernel = flag_value(v); }),
    Own::row(0, "exclude-guest", "", ArgKind::Flag, false, Group::Filter, "exclude guest",
             [](HrtimerOptions& o, OptionValue v) { o.exclude_guest = flag_value(v); }),
};

class Hrtimer final : public Profiler {
public:
    explicit Hrtimer(Context& ctx) : ctx_(ctx), own_(ctx.options().own_as<HrtimerOptions>()) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        if (attaches_tasks(opt)) throw Error("hrtimer can only be attached to cpu.");
        if (!own_.period_ns && !own_.freq)
            throw Error::usage("monitor(hrtimer) init failed: give --period or -F");
        if (own_.period_ns && own_.period_ns < 100000)
            throw Error::usage("hrtimer: --period must be at least 100us");
        const std::string events = event::joined_lists(opt);
        const std::string text = opt.words.empty() ? "" : opt.words[0];
        if (opt.words.size() > 1)
            throw Error::usage("hrtimer takes one expression: '" + opt.words[1] + "' is extra");
        if (!events.empty() && text.empty()) throw Error::usage(" {expression} needs to be specified.");
        EventSpec leader = counters::clock_leader(own_.period_ns, own_.period_ns ? 0 : own_.freq);
        leader.attr.exclude_user = own_.exclude_user;
        leader.attr.exclude_kernel = own_.exclude_kernel;
        leader.attr.exclude_guest = own_.exclude_guest;
        const bool kernel = opt.kernel_callchain.value_or(true), user = opt.user_callchain.value_or(false);
        if (opt.call_graph) unwind::request_stacks(leader.attr, kernel, user, opt.dwarf_stack);
        EventPlan p;
        p.pages = opt.call_graph ? 4 : 2;
        leader.attr.watermark = 1;
        leader.attr.wakeup_watermark = uint32_t(p.pages) * 4096 / 2;
        if (events.empty()) {
            p.events.push_back(std::move(leader));
        } else {
            counters::plan_group(ctx_, "hrtimer", events, std::move(leader), p, group_);
            for (size_t e = 1; e < p.events.size(); ++e)
                full_names_.push_back(p.events[e].sys + ":" + p.events[e].name);
        }
        if (!text.empty()) {
            expr_ = std::make_unique<counters::CountExpr>(text, group_.vars);
            if (opt.verbose > 0) std::printf("hrtimer: expression: %s\n", expr_->source().c_str());
        }
        stack::stack_outputs(
            opt, ctx_.symbolizer(),
            {.profiler = "hrtimer", .stacks = opt.call_graph, .kernel = kernel, .user = user, .flame = false})
            .move_to(printer_, flame_, pprof_);
        return p;
    }

    void sample(const Sample& s) noexcept override;

private:
    Context& ctx_;
    const HrtimerOptions& own_;
    counters::CounterGroup group_;
    std::vector<std::string> full_names_;
    std::unique_ptr<counters::CountExpr> expr_;
    std::vector<std::vector<uint64_t>> prev_;  // per instance: members then the leader
    std::vector<bool> seen_;
    std::vector<uint64_t> counts_, values_;
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    std::string line_;
};

void Hrtimer::sample(const Sample& s) noexcept {
    if (s.event_index != 0 || !s.read) return;
    const size_t i = size_t(std::max(s.instance, 0));
    const size_t n = group_.names.size();
    if (i >= prev_.size()) {
        prev_.resize(i + 1, std::vector<uint64_t>(n + 1, 0));
        seen_.resize(i + 1, false);
    }
    ReadValues rv(s.read, s.read_words, group_.read_format);
    if (!rv.ok() || rv.size() == 0) return;
    const std::vector<int> present = group_.present_on(int(s.cpu));
    values_.clear();
    for (size_t k = 0; k < rv.size(); ++k) values_.push_back(rv.value(k));
    counts_.assign(n, 0);
    bool first = !seen_[i];
    seen_[i] = true;
    const uint64_t period = counters::group_deltas(values_, present, prev_[i], counts_, first);
    if (!period) return;  // the first sample measures from enabling
    const int verbose = ctx_.options().verbose;
    const bool all = present.size() == n;
    if (verbose <= 0 && (!expr_ || !all || !expr_->eval(counts_, period))) return;
    line_.clear();
    counters::append_timer_line(ctx_, s, "hrtimer", period, line_);
    for (int e : present) {
        line_ += verbose > 0 ? "  " : "    ";
        line_ += verbose > 0 ? full_names_[size_t(e)] : group_.vars[size_t(e)];
        line_ += ' ';
        line_ += std::to_string(counts_[size_t(e)]);
        line_ += '\n';
    }
    if (s.callchain && printer_)
        printer_->print(s.callchain, s.callchain_nr, s.pid, stack::max_stack_of(s.event->attr), line_);
    std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
}

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    const HrtimerOptions& own = opt.own_as<HrtimerOptions>();
    std::string tail = own.period_ns ? "--period " + std::to_string(own.period_ns) + " "
                       : own.freq    ? "-F " + std::to_string(own.freq) + " "
                                     : "(-F . | --period .) ";
    tail += opt.call_graph ? "-g " : "[-g] ";
    tail += opt.words.empty() ? "EXPRESSION " : "'" + opt.words[0] + "' ";
    return counters::help_line("hrtimer", opt, events, tail);
}

}  // namespace

extern const ProfilerInfo hrtimer_info;
const ProfilerInfo hrtimer_info = {
    .name = "hrtimer",
    .summary = "Sample counters with a per-CPU timer; print when an expression over them is true.",
    .usage = "[OPTION...] [-e EVENT[,EVENT...]] (-F HZ | --period TIME) [-g] EXPRESSION",
    .body = {"SYNOPSIS", "    Every period a cpu-clock timer on each CPU reads the events of -e (counting",
             "    only, kernel filters only). EXPRESSION sees one variable per event (its alias,",
             "    or its name without 'sys:') holding the count of the period, and 'period',",
             "    the cpu-clock ns since the previous sample. The sample is printed when it is",
             "    true (every sample with -v), with the interrupted stack with -g. The first",
             "    sample of each CPU (measured from enabling) is not evaluated.", "", "EXAMPLES",
             "    perf-prof hrtimer -e sched:sched_switch -C 0 --period 10ms 'sched_switch==0'"},
    .options = {{Opt::UserCallchain},
                {Opt::KernelCallchain},
                {Opt::Event, "events to count (counting only, kernel filters only)"},
                {Opt::CallGraph, "print the interrupted stack"}},
    .create = create_profiler<Hrtimer>,
    .takes_words = true,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
