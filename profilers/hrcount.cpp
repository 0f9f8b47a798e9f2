// hrcount: events counted in fixed periods by a per-CPU hrtimer (SPEC-PROFILERS §P9).
#include <memory>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/parse.h"
#include "core/time.h"
#include "counters/group_plan.h"
#include "counters/series_run.h"
#include "event/resolve.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {
namespace {

struct HrcountOptions final : ProfilerOptions {
    uint64_t period_ns = 0;  // --period; 0 = the interval
};

using Own = OwnOptions<HrcountOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "period", "TIME", ArgKind::Value, false, Group::Profiler,
             "hrtimer period: one slot per period (default: the -i interval)",
             [](HrcountOptions& o, OptionValue v) {
                 o.period_ns = core::parse_time_ns(*v);
                 if (!o.period_ns) throw Error::usage("--period must be greater than 0");
             }),
};

class Hrcount final : public Profiler {
public:
    explicit Hrcount(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        if (attaches_tasks(opt)) throw Error("hrcount can only be attached to cpu.");
        const uint64_t interval = (opt.interval_ms ? opt.interval_ms : 1000) * 1000000;
        period_ = opt.own_as<HrcountOptions>().period_ns ? opt.own_as<HrcountOptions>().period_ns : interval;
        if (period_ < 100000) throw Error::usage("hrcount: --period must be at least 100us");
        const uint64_t slots = counters::slots_per_round(interval, period_);
        EventPlan p;
        EventSpec leader = counters::clock_leader(period_, 0);
        leader.attr.wakeup_events = uint32_t(std::min<uint64_t>(slots, 1u << 20));
        counters::plan_group(ctx_, "hrcount", event::joined_lists(opt), std::move(leader), p, group_);
        p.pages = 2;
        p.interval_ms = 1000;
        run_ = std::make_unique<counters::SeriesRun>(ctx_, group_, "hrcount", slots, period_, opt.perins);
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (s.event_index != 0 || !s.read) return;
        bool late = false;
        const uint64_t clock = run_->on_read(s.instance, s.read, s.read_words, late);
        if (late || ctx_.options().verbose > 0) {
            line_.clear();
            ctx_.wall(s.time, line_);
            line_ += "  ";
            core::append_uint(line_, s.pid, 6);
            line_ += '/';
            core::append_left(line_, std::to_string(s.tid), 6);
            line_ += " [";
            core::append_uint(line_, s.cpu, 3, '0');
            line_ += "]  ";
            counters::append_evts_t(s.time, line_);
            line_ += ": hrcount: cpu-clock: ";
            core::append_uint(line_, clock);
            line_ += " ns\n";
            std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
        }
        run_->flush(true);
    }

    void interval() override {
        if (run_) run_->flush(false);
    }

private:
    Context& ctx_;
    uint64_t period_ = 0;
    counters::CounterGroup group_;
    std::unique_ptr<counters::SeriesRun> run_;
    std::string line_;
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    const HrcountOptions& own = opt.own_as<HrcountOptions>();
    std::string tail = own.period_ns ? "--period " + std::to_string(own.period_ns) + " " : "[--period .] ";
    tail += opt.perins ? "--perins " : "[--perins] ";
    return counters::help_line("hrcount", opt, events, tail);
}

}  // namespace

extern const ProfilerInfo hrcount_info;
const ProfilerInfo hrcount_info = {
    .name = "hrcount",
    .summary = "Count events in fixed periods, sampled by a per-CPU hrtimer.",
    .usage = "[OPTION...] -e EVENT[,EVENT...] [--period TIME] [--perins]",
    .body =
        {"SYNOPSIS", "    A cpu-clock timer on every CPU fires every --period and reads the group of",
         "    events; every -i the counts of each period are printed as one series:",
         "    'name c1|c2|...|cH | total SUM'. CPUs only; kernel filters only. The packed",
         "    terminal layout of upstream is not implemented: the plain layout is always printed.", "",
         "EXAMPLES", "    perf-prof hrcount -e sched:sched_switch --period 100ms -i 1000",
         "    perf-prof hrcount -e 'sched:sched_switch,sched:sched_wakeup//cpus=0-2/' --period 50ms --perins"},
    .options = {{Opt::Event, "events to count (counting only, kernel filters only)"},
                {Opt::Perins, "one series per CPU"}},
    .create = create_profiler<Hrcount>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
