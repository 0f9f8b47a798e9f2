// watchdog: predicts soft and hard lockups before the kernel's watchdog fires, from the
// kernel's per-CPU watchdog hrtimer, the stopper threads and a sampling clock
// (SPEC-PROFILERS §P20; the per-CPU state machine is hw::LockupPredictor).
//
// Two stages in one plan. Stage 1 samples hrtimer_expire_entry filtered on watchdog_timer_fn
// and learns each CPU's watchdog hrtimer. Stage 2's events are planned up front, disabled
// (EventSpec::start_disabled) and without filters: the kernel takes one filter per event, so
// when stage 1 knows every CPU's hrtimer each CPU's copy of the three hrtimer events gets its
// `hrtimer==0x...` filter (Context::set_filter), stage 2's events are enabled and stage 1's is
// disabled (Context::enable_event). No event is opened after the session starts.
#include <cpuid.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/parse.h"
#include "core/text.h"
#include "core/time.h"
#include "event/resolve.h"
#include "event/tracepoint.h"
#include "filter/record_field.h"
#include "hw/hw_print.h"
#include "hw/watchdog.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/event_list.h"
#include "stack/stack_printer.h"
#include "tep/tep.h"

namespace perfprof {

namespace {

struct WatchdogOptions final : ProfilerOptions {
    uint64_t freq = 10;  // -F: clock samples per second on each CPU
};

using Own = OwnOptions<WatchdogOptions>;
const OptionRow kOwnOptions[] = {
    Own::row('F', "freq", "HZ", ArgKind::Value, false, Group::Profiler,
             "clock samples per second on each CPU (default 10):\n"
             "the hard-lockup check runs at each",
             [](WatchdogOptions& o, OptionValue v) { o.freq = core::parse_count(*v, "freq"); }),
};

// The events of the plan, by index.
enum { kStage1, kExpire, kStart, kCancel, kSwitch, kClock, kEvents };

// CPUID leaf 1, ECX bit 31: set by hypervisors for their guests.
bool in_guest() {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31));
}

// The address of the text symbol `name` in /proc/kallsyms, 0 when absent.
uint64_t kallsyms_addr(const std::string& name) {
    std::ifstream f("/proc/kallsyms");
    std::string line;
    while (std::getline(f, line)) {
        const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
        if (sp2 == std::string::npos) continue;
        const std::string_view sym = std::string_view(line).substr(sp2 + 1);
        if (sym == name ||
            (sym.size() > name.size() && sym.substr(0, name.size()) == name && sym[name.size()] == '\t')) {
            uint64_t v = 0;
            if (core::parse_hex(std::string_view(line).substr(0, sp1), v)) return v;
        }
    }
    return 0;
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
    return buf;
}

class Watchdog final : public Profiler {
public:
    explicit Watchdog(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override;

    void sample(const Sample& s) noexcept override {
        if (s.event_index == kStage1) {
            if (!stage2_) discovered(s);
            return;
        }
        if (!stage2_ || s.cpu == UINT32_MAX) return;
        const int cpu = int(s.cpu);
        hw::LockupPredictor::Verdict v;
        switch (s.event_index) {
            case kExpire:
                v = predictor_->expire(cpu, s.time);
                break;
            case kStart:
                predictor_->start(cpu, s.time);
                break;
            case kCancel:
                predictor_->cancel(cpu);
                break;
            case kSwitch:
                predictor_->touch(cpu, s.time);
                break;
            case kClock:
                clock_sample(s, predictor_->clock(cpu, s.time));
                return;
            default:
                return;
        }
        say(v.message);
        if (predictor_->print_sched(cpu) || v.print) {
            line_.clear();
            output::format_event_line(ctx_, s, line_);
            std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
        }
    }

    // Recommendation (SPEC §P20): stage 1 that has not ended after 2T seconds says why.
    void tick() override {
        if (stage2_ || warned_ || core::monotonic_now_ns() - started_ < int64_t(2 * thresh_) * 1'000'000'000)
            return;
        warned_ = true;
        std::fprintf(stderr,
                     "perf-prof: watchdog: after %" PRIu64
                     " s the watchdog hrtimer of %zu of %zu CPUs is still "
                     "unknown: is the kernel watchdog running there (kernel.watchdog, "
                     "kernel.watchdog_cpumask)? Some VMs do not deliver the samples of an idle vCPU.\n",
                     2 * thresh_, discovery_->cpus() - discovery_->found_count(), discovery_->cpus());
    }

    void finish() override { sync_out(); }

private:
    void discovered(const Sample& s);
    void start_stage2();
    void clock_sample(const Sample& s, const hw::LockupPredictor::Verdict& v);

    // "{WALL(now)} {message}" on the output.
    void say(const std::string& message) {
        if (message.empty()) return;
        line_.clear();
        core::append_wall(core::realtime_now_ns(), line_);
        line_ += ' ';
        line_ += message;
        line_ += '\n';
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    // The log must survive the lockup it predicts.
    void sync_out() {
        FILE* out = ctx_.out();
        std::fflush(out);
        ::fsync(fileno(out));  // EINVAL on a pipe or terminal: nothing to sync there
    }

    Context& ctx_;
    uint64_t thresh_ = 0;
    std::unique_ptr<hw::WatchdogDiscovery> discovery_;
    std::unique_ptr<hw::LockupPredictor> predictor_;
    filter::RecordField hrtimer_field_;
    std::unique_ptr<stack::Printer> printer_;  // -g
    std::string clock_name_;
    bool stage2_ = false, warned_ = false;
    int64_t started_ = 0;
    std::string line_;
};

EventPlan Watchdog::plan() {
    const Options& opt = ctx_.options();
    const WatchdogOptions& own = opt.own_as<WatchdogOptions>();
    if (attaches_tasks(opt) || !opt.cgroups.empty())
        throw Error::usage("watchdog: watches CPUs (-C): -p, -t, --cgroups and a command are not usable");
    const std::string text = core::read_file_or_empty("/proc/sys/kernel/watchdog_thresh");
    if (text.empty()) throw Error("watchdog: cannot read /proc/sys/kernel/watchdog_thresh");
    thresh_ = hw::parse_watchdog_thresh(text);
    if (thresh_ == 0)
        throw Error("watchdog: kernel.watchdog_thresh is 0: the kernel's lockup detectors are off");
    // The CPUs: -C (else the online ones) within the watchdog's own cpumask.
    std::vector<int> cpus = core::parse_cpu_list(opt.cpus.empty() ? core::online_cpus_text() : opt.cpus);
    const std::vector<int> online = core::parse_cpu_list(core::online_cpus_text());
    std::string mask = core::read_file_or_empty("/proc/sys/kernel/watchdog_cpumask");
    while (!mask.empty() && (mask.back() == '\n' || mask.back() == ' ')) mask.pop_back();
    const std::vector<int> allowed = mask.empty() ? online : core::parse_cpu_list(mask);
    std::erase_if(cpus, [&](int c) {
        return std::find(allowed.begin(), allowed.end(), c) == allowed.end() ||
               std::find(online.begin(), online.end(), c) == online.end();
    });
    if (cpus.empty())
        throw Error::usage("watchdog: no CPU of -C is in kernel.watchdog_cpumask (" + mask + ")");
    const uint64_t fn = kallsyms_addr("watchdog_timer_fn");
    if (!fn) throw Error("watchdog: watchdog_timer_fn is not in /proc/kallsyms");

    auto tracepoint = [&](const char* sys, const char* name) {
        EventSpec ev = event::sampled_tracepoint(
            ctx_.tep(), sys, name,
            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW);
        ev.fields = event::tracepoint_fields(*ev.tp);
        ev.attr.pinned = 1;
        ev.cpus = cpus;
        return ev;
    };
    EventPlan p;
    p.events.push_back(tracepoint("timer", "hrtimer_expire_entry"));
    p.events[kStage1].filter = "function==" + hex(fn);
    hrtimer_field_ = filter::RecordField::integer(p.events[kStage1].fields, "hrtimer");
    if (!hrtimer_field_.ok)
        throw Error("watchdog: timer:hrtimer_expire_entry has no integer field 'hrtimer'");
    for (const char* name : {"hrtimer_expire_entry", "hrtimer_start", "hrtimer_cancel"}) {
        p.events.push_back(tracepoint("timer", name));
        p.events.back().start_disabled = true;
    }
    p.events.push_back(tracepoint("sched", "sched_switch"));
    p.events.back().filter = "next_comm~\"migration/*\"";
    p.events.back().start_disabled = true;

    EventSpec clock;
    clock.sys = "watchdog";
    clock.kind = EventKind::Other;
    perf_event_attr& a = clock.attr;
    a.size = sizeof(a);
    a.freq = 1;
    a.sample_freq = own.freq;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU;
    a.pinned = 1;
    // Cycles stop with a CPU stuck with interrupts off only on bare metal; a guest's PMU (if
    // any) is virtual: the software clock there (SPEC §P20).
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    clock_name_ = "cpu-clock";
    if (!in_guest()) {
        perf_event_attr hw = a;
        hw.type = PERF_TYPE_HARDWARE;
        hw.config = PERF_COUNT_HW_CPU_CYCLES;
        hw.disabled = 1;
        if (perf::open_on_self(hw)) {
            a.type = hw.type;
            a.config = hw.config;
            clock_name_ = "cpu-cycles";
        }
    }
    clock.name = clock_name_;
    if (opt.call_graph) {
        a.sample_type |= PERF_SAMPLE_CALLCHAIN;
        a.exclude_callchain_user = 1;
        printer_ = std::make_unique<stack::Printer>(ctx_.symbolizer(), true, false);
    }
    clock.cpus = cpus;
    clock.start_disabled = true;
    p.events.push_back(std::move(clock));

    discovery_ = std::make_unique<hw::WatchdogDiscovery>(cpus);
    predictor_ = std::make_unique<hw::LockupPredictor>(thresh_, opt.verbose);
    if (opt.verbose > 0)
        std::fprintf(ctx_.out(), "watchdog: thresh %" PRIu64 " s, %zu CPUs, stage 1 filter %s\n", thresh_,
                     cpus.size(), p.events[kStage1].filter.c_str());
    started_ = core::monotonic_now_ns();
    p.pages = opt.call_graph ? 4 : 2;
    p.per_event_wakeup = true;
    p.tick_ms = 1000;
    return p;
}

void Watchdog::discovered(const Sample& s) {
    // A bare event line: the standard line without its WALL column (SPEC §P20).
    line_.clear();
    output::format_event_line(ctx_, s, line_);
    constexpr size_t kWall = 27;  // WALL(ev) and its space
    if (line_.size() > kWall) std::fwrite(line_.data() + kWall, 1, line_.size() - kWall, ctx_.out());
    int64_t timer = 0;
    if (s.cpu == UINT32_MAX || !hrtimer_field_.read(s.raw, s.raw_size, timer)) return;
    discovery_->found(int(s.cpu), uint64_t(timer));
    if (discovery_->complete()) start_stage2();
}

void Watchdog::start_stage2() {
    stage2_ = true;
    line_.clear();
    core::append_wall(core::realtime_now_ns(), line_);
    line_ += "  == collect all ";
    core::append_uint(line_, discovery_->cpus());
    line_ += " watchdog hrtimer\n";
    std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    const int verbose = ctx_.options().verbose;
    for (int i = 0; i < ctx_.instances(); i++) {
        const int cpu = ctx_.instance_cpu(i);
        const uint64_t timer = discovery_->hrtimer(cpu);
        if (!timer) continue;
        const std::string filter = "hrtimer==" + hex(timer);
        for (int e : {kExpire, kStart, kCancel}) {
            const std::string err = ctx_.set_filter(e, i, filter);
            if (!err.empty())
                std::fprintf(stderr, "perf-prof: watchdog: CPU %d: filter '%s': %s\n", cpu, filter.c_str(),
                             err.c_str());
            else if (verbose > 0)
                std::fprintf(ctx_.out(), "watchdog: CPU %d %s filter %s\n", cpu,
                             e == kExpire  ? "timer:hrtimer_expire_entry"
                             : e == kStart ? "timer:hrtimer_start"
                                           : "timer:hrtimer_cancel",
                             filter.c_str());
        }
    }
    if (verbose > 0)
        std::fprintf(ctx_.out(), "watchdog: sched:sched_switch filter next_comm~\"migration/*\"\n");
    for (int e : {kExpire, kStart, kCancel, kSwitch, kClock}) ctx_.enable_event(e, true);
    ctx_.enable_event(kStage1, false);
    sync_out();
}

void Watchdog::clock_sample(const Sample& s, const hw::LockupPredictor::Verdict& v) {
    say(v.message);
    if (!v.print) return;
    line_.clear();
    hw::append_head(ctx_, s.time, s.tid, s.cpu, line_);
    line_ += "watchdog: ";
    line_ += clock_name_;
    line_ += '\n';
    if (printer_ && s.callchain) printer_->print(s.callchain, s.callchain_nr, s.pid, line_);
    std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    sync_out();
}

}  // namespace

extern const ProfilerInfo watchdog_info;
const ProfilerInfo watchdog_info = {
    .name = "watchdog",
    .summary = "Predict soft and hard lockups before the kernel's watchdog fires.",
    .usage = "[-C cpus] [-F HZ] [-g] [-o file]",
    .body =
        {
            "SYNOPSIS",
            "    Stage 1 finds each CPU's watchdog hrtimer (timer:hrtimer_expire_entry of",
            "    watchdog_timer_fn, printed) and says '== collect all N watchdog hrtimer'; if",
            "    that has not happened after 2 x kernel.watchdog_thresh seconds it warns. Stage 2",
            "    follows that hrtimer, the stopper threads (migration/N) and a clock sampled F",
            "    times a second (cpu-clock in a VM) and prints 'WILL: soft lockup' when the",
            "    stopper has not run for 2/5 of watchdog_thresh, 'WILL: hard lockup' when the",
            "    hrtimer has not fired for 2/5 of it and 0.2 s, with the suspect CPU's events",
            "    and (-g) kernel stacks. The output is flushed and fsync'ed after each report.",
            "    CPUs: -C (or all) within kernel.watchdog_cpumask.",
            "",
            "TRACEPOINT",
            "    timer:hrtimer_expire_entry, timer:hrtimer_start, timer:hrtimer_cancel,",
            "    sched:sched_switch",
            "",
            "EXAMPLES",
            "    perf-prof watchdog -F 10 -g",
            "    perf-prof watchdog -F 10 -g -o watchdog.log",
        },
    .options = {{Opt::CallGraph, "print the kernel stacks of the clock samples of suspect CPUs"}},
    .create = create_profiler<Watchdog>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
