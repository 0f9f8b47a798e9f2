// stat: the hrcount series read by a user-space timer, on CPUs or threads (SPEC-PROFILERS §P10).
#include <memory>
#include <string>
#include <vector>

#include "core/parse.h"
#include "counters/group_plan.h"
#include "counters/series_run.h"
#include "event/resolve.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {
namespace {

struct StatOptions final : ProfilerOptions {
    uint64_t period_ns = 0;  // --period: the read period; 0 = the interval
};

using Own = OwnOptions<StatOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "period", "TIME", ArgKind::Value, false, Group::Profiler,
             "read period (default: the -i interval); with -i longer than it,\n"
             "every -i prints interval/period slots",
             [](StatOptions& o, OptionValue v) {
                 o.period_ns = core::parse_time_ns(*v);
                 if (!o.period_ns) throw Error::usage("--period must be greater than 0");
             }),
};

class Stat final : public Profiler {
public:
    explicit Stat(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const uint64_t interval = (opt.interval_ms ? opt.interval_ms : 1000) * 1000000;
        const uint64_t period =
            opt.own_as<StatOptions>().period_ns ? opt.own_as<StatOptions>().period_ns : interval;
        // The swap rule: reads every min(period, interval), H = the longer over the shorter.
        const uint64_t read = std::min(period, interval);
        if (read < 1000000) throw Error::usage("stat: the read period must be at least 1ms");
        EventPlan p;
        counters::plan_group(ctx_, "stat", event::joined_lists(opt), counters::clock_leader(0, 0), p, group_);
        p.pages = 1;  // the leader does not sample
        p.interval_ms = 1000;
        p.tick_ms = read / 1000000;
        run_ = std::make_unique<counters::SeriesRun>(
            ctx_, group_, "stat", counters::slots_per_round(interval, period), read, opt.perins);
        return p;
    }

    void sample(const Sample&) noexcept override {}

    void tick() override {
        const int n = ctx_.instances();
        bool late = false;
        for (int i = 0; i < n; ++i)
            if (ctx_.read_counter(0, i, words_)) run_->on_read(i, words_.data(), words_.size(), late);
        run_->flush(true);
    }

    void interval() override {
        if (run_) run_->flush(true);
    }

private:
    Context& ctx_;
    counters::CounterGroup group_;
    std::unique_ptr<counters::SeriesRun> run_;
    std::vector<uint64_t> words_;
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    const StatOptions& own = opt.own_as<StatOptions>();
    std::string tail = own.period_ns ? "--period " + std::to_string(own.period_ns) + " " : "[--period .] ";
    tail += opt.perins ? "--perins " : "[--perins] ";
    tail += opt.pids.empty() ? "[-p .] " : "-p " + opt.pids + " ";
    return counters::help_line("stat", opt, events, tail);
}

}  // namespace

extern const ProfilerInfo stat_info;
const ProfilerInfo stat_info = {
    .name = "stat",
    .summary = "Count events in fixed periods, read by a user-space timer (CPUs or threads).",
    .usage = "[OPTION...] -e EVENT[,EVENT...] [--perins] [--period TIME] [[--] <command>]",
    .body = {"SYNOPSIS", "    Every --period, the group of every CPU or thread (a cpu-clock counter and the",
             "    events) is read; every -i, the counts of each period are printed as one",
             "    series: 'name c1|c2|...|cH | total SUM'. --period is the read period and -i",
             "    the print interval (swapped when -i is shorter). The packed terminal layout",
             "    of upstream is not implemented: the plain layout is always printed.", "", "EXAMPLES",
             "    perf-prof stat -e sched:sched_switch --period 100ms -i 1000",
             "    perf-prof stat -e sched:sched_switch,sched:sched_wakeup -p 1234 --perins"},
    .options = {{Opt::Event, "events to count (counting only, kernel filters only)"},
                {Opt::Perins, "one series per CPU or thread"}},
    .create = create_profiler<Stat>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
