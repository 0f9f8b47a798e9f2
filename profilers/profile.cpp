// profile: periodic CPU sampling with stacks and flame graphs (SPEC §4.2).
#include <cpuid.h>
#include <linux/perf_event.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/parse.h"
#include "core/time.h"
#include "filter/bpf_filter.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/event_list.h"
#include "perf/tsc.h"
#include "sched/off_cpu.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "stack/top_table.h"
#include "stack/timeline_samples.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

// The options only profile takes (SPEC §1.5, §1.9).
struct ProfileOptions final : ProfilerOptions {
    uint64_t freq = 0;        // -F, samples per second; 0 = not given
    std::optional<int> than;  // --than PCT
    // PMU filters: perf_event_attr exclude_* bits.
    bool exclude_user = false, exclude_kernel = false, exclude_guest = false, exclude_host = false;
    filter::EbpfFilters ebpf;
    bool off_cpu = false;      // --off-cpu
    uint64_t off_cpu_min = 0;  // --off-cpu-min TIME, ns

    bool print_samples = false;   // --print-samples: upstream's line per sample
    std::optional<uint64_t> top;  // --top N: rows of the table of functions, 0 = none
};

uint32_t u32(OptionValue v, const char* option) {
    return uint32_t(core::parse_bounded(*v, option, UINT32_MAX));
}

using K = ArgKind;
using G = Group;
using Own = OwnOptions<ProfileOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "exclude-user", "", K::Flag, false, G::Filter, "sample kernel mode only",
             [](ProfileOptions& o, OptionValue v) { o.exclude_user = flag_value(v); }),
    Own::row(0, "exclude-kernel", "", K::Flag, false, G::Filter, "sample user mode only",
             [](ProfileOptions& o, OptionValue v) { o.exclude_kernel = flag_value(v); }),
    Own::row(0, "exclude-guest", "", K::Flag, false, G::Filter, "do not sample guests",
             [](ProfileOptions& o, OptionValue v) { o.exclude_guest = flag_value(v); }),
    Own::row('G', "exclude-host", "", K::Flag, false, G::Filter, "sample guests only",
             [](ProfileOptions& o, OptionValue v) { o.exclude_host = flag_value(v); }),
    Own::row(0, "irqs_disabled", "0|1", K::OptionalValue, false, G::Filter,
             "eBPF: keep samples taken with interrupts disabled\n"
             "(=0: enabled)",
             [](ProfileOptions& o, OptionValue v) {
                 o.ebpf.irqs_disabled = core::parse_zero_or_one(v, "irqs_disabled");
             }),
    Own::row(0, "tif_need_resched", "0|1", K::OptionalValue, false, G::Filter,
             "eBPF: keep samples of tasks with TIF_NEED_RESCHED\n"
             "set (=0: clear)",
             [](ProfileOptions& o, OptionValue v) {
                 o.ebpf.tif_need_resched = core::parse_zero_or_one(v, "tif_need_resched");
             }),
    Own::row(0, "exclude_pid", "PID", K::Value, false, G::Filter, "eBPF: drop the samples of this process",
             [](ProfileOptions& o, OptionValue v) {
                 o.ebpf.exclude_pid = uint32_t(core::parse_bounded(*v, "exclude_pid", INT32_MAX));
             }),
    Own::row(0, "nr_running_min", "N", K::Value, false, G::Filter,
             "eBPF: keep samples of CPUs with at least N runnable\n"
             "tasks",
             [](ProfileOptions& o, OptionValue v) { o.ebpf.nr_running_min = u32(v, "nr_running_min"); }),
    Own::row(0, "nr_running_max", "N", K::Value, false, G::Filter,
             "eBPF: keep samples of CPUs with at most N runnable\n"
             "tasks",
             [](ProfileOptions& o, OptionValue v) { o.ebpf.nr_running_max = u32(v, "nr_running_max"); }),
    Own::row(0, "sched_policy", "N", K::Value, false, G::Filter,
             "eBPF: keep samples of tasks with this policy (0\n"
             "NORMAL, 1 FIFO, 2 RR, 3 BATCH, 5 IDLE, 6 DEADLINE)",
             [](ProfileOptions& o, OptionValue v) {
                 // SCHED_NORMAL..SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE, SCHED_EXT (4 is unused).
                 const uint64_t p = core::parse_bounded(*v, "sched_policy", 7);
                 if (p == 4) throw Error::usage("option `sched_policy': 4 is not a scheduling policy");
                 o.ebpf.sched_policy = int(p);
             }),
    Own::row(0, "prio", "prio[-prio],...", K::Value, false, G::Filter,
             "eBPF: keep samples of tasks with these priorities\n"
             "(0-99 real-time, 100-139 normal)",
             [](ProfileOptions& o, OptionValue v) { o.ebpf.prio = core::parse_id_list(*v, "prio", 139); }),
    Own::row('F', "freq", "n", K::Value, false, G::Profiler, "samples per second on each CPU or thread",
             [](ProfileOptions& o, OptionValue v) { o.freq = core::parse_count(*v, "freq"); }),
    Own::row(0, "off-cpu", "", K::Flag, false, G::Profiler,
             "with -g: also count the time tasks spend off the CPU\n"
             "(waiting, sleeping, preempted), each wait with the\n"
             "stack it left with, under an [off-cpu: STATE] frame,\n"
             "in units of 1/F s: a wall-clock profile",
             [](ProfileOptions& o, OptionValue v) { o.off_cpu = flag_value(v); }),
    Own::row(0, "off-cpu-min", "TIME", K::Value, false, G::Profiler,
             "with --off-cpu: leave out waits shorter than TIME\n(e.g. 100us)",
             [](ProfileOptions& o, OptionValue v) { o.off_cpu_min = core::parse_time_ns(*v); }),
    Own::row(0, "print-samples", "", K::Flag, false, G::Profiler,
             "print a line per sample (with -g and no --flame-graph\n"
             "or --pprof, its stack too), as upstream perf-prof\n"
             "does; no table unless --top N is given too",
             [](ProfileOptions& o, OptionValue v) { o.print_samples = flag_value(v); }),
    Own::row(0, "top", "N", K::Value, false, G::Profiler,
             "rows of the table of the hottest functions printed at\n"
             "exit and every -i (default 20, 0: none; with\n"
             "--print-samples: none)",
             [](ProfileOptions& o, OptionValue v) { o.top = core::parse_bounded(*v, "top", UINT32_MAX); }),
    Own::row(0, "than", "PCT", K::Value, false, G::Profiler,
             "print only CPUs/threads busier than PCT percent\n"
             "of each second",
             [](ProfileOptions& o, OptionValue v) { o.than = core::parse_percent(*v, "than"); }),
};

// eBPF filters that would keep no sample, or name no process.
void check_ebpf_filters(const filter::EbpfFilters& f) {
    if (f.nr_running_min && f.nr_running_max && *f.nr_running_min > *f.nr_running_max)
        throw Error::usage("profile: --nr_running_min " + std::to_string(*f.nr_running_min) +
                           " is above --nr_running_max " + std::to_string(*f.nr_running_max) +
                           ": no sample would be kept");
    struct stat st;
    if (f.exclude_pid && ::stat(("/proc/" + std::to_string(*f.exclude_pid)).c_str(), &st) != 0)
        throw Error("profile: --exclude_pid: process " + std::to_string(*f.exclude_pid) + " does not exist");
}

// CPUID leaf 1, ECX bit 31: set by hypervisors for their guests.
bool in_vm() {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31));
}

// CPUID leaf 0 vendor "GenuineIntel".
bool intel() {
    unsigned a, b, c, d;
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;
}

// Whether the PMU opens this hardware event (none in many VMs): tried once, silently.
bool hardware_opens(const perf_event_attr& want) {
    perf_event_attr a = want;
    a.disabled = 1;
    return static_cast<bool>(perf::open_on_self(a));
}

class ProfileProfiler final : public Profiler {
public:
    explicit ProfileProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const ProfileOptions& own = opt.own_as<ProfileOptions>();
        if (own.freq == 0) throw Error::usage("profile: -F freq is required");
        // perf_event_open answers a frequency above the limit with a bare EINVAL.
        if (const uint64_t max = perf::max_sample_rate(); max && own.freq > max)
            throw Error::usage("profile: -F " + std::to_string(own.freq) +
                                   " is above kernel.perf_event_max_sample_rate (" + std::to_string(max) +
                                   ")",
                               "use -F " + std::to_string(max) +
                                   " or less, or raise the limit: sysctl kernel.perf_event_max_sample_rate=" +
                                   std::to_string(own.freq));
        if (own.exclude_user && own.exclude_kernel)
            throw Error::usage("profile: --exclude-user and --exclude-kernel leave nothing to sample");
        if (own.exclude_guest && own.exclude_host)
            throw Error::usage("profile: --exclude-guest and --exclude-host leave nothing to sample");
        check_ebpf_filters(own.ebpf);
        if (own.off_cpu_min && !own.off_cpu) throw Error::usage("profile: --off-cpu-min needs --off-cpu");
        if (own.off_cpu && !opt.call_graph)
            throw Error::usage(
                "profile: --off-cpu needs -g: an off-CPU sample is the stack a task left the CPU with",
                "add -g (or --call-graph dwarf)");
        if (own.off_cpu && ctx_.forwarding())
            throw Error::usage("profile: --off-cpu cannot run nested in another profiler");
        freq_ = own.freq;
        if (own.than) min_count_ = (freq_ * static_cast<uint64_t>(*own.than) + 99) / 100;

        EventSpec ev;
        ev.sys = "profile";
        ev.kind = EventKind::Other;
        perf_event_attr& a = ev.attr;
        a.size = sizeof(a);
        // SPEC §4.2 reads the counter (PERF_SAMPLE_READ) and prints its growth since the
        // previous sample: for a sampling event that growth is the sample's period, which the
        // kernel gives as PERF_SAMPLE_PERIOD. READ costs much more: on the inherited events of a
        // command or -p (6.12+), it stops the kernel from swapping the perf contexts of the
        // program's threads at each switch, and a context-switch storm ran at a quarter of its
        // speed (bench/off_cpu_bench.py); the counters it read were also per thread, not per
        // ring, so the growth per ring mixed threads.
        a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
        a.exclude_user = own.exclude_user;
        a.exclude_kernel = own.exclude_kernel;
        a.exclude_guest = own.exclude_guest;
        a.exclude_host = own.exclude_host;
        ev.name = choose_event(a, opt.verbose);
        period_ns_ = a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_CPU_CLOCK;
        // The software clock has no notion of host and guest: it would sample the host.
        if (own.exclude_host && a.type == PERF_TYPE_SOFTWARE)
            throw Error::usage(
                "profile: -G/--exclude-host needs a hardware PMU, and this machine has none: "
                "the cpu-clock event it falls back to cannot leave the host out");
        if (opt.verbose > 0)
            std::fprintf(ctx_.out(), "profile: sampling %s at %llu Hz\n", ev.name.c_str(),
                         static_cast<unsigned long long>(freq_));
        suffix_ = " " + ev.name + "\n";
        // Stacks: kernel and user halves by default (SPEC §4.2).
        bool stack_kernel = false, stack_user = false;
        if (opt.call_graph) {
            // A user-mode sample has no kernel frames; a kernel-mode one has the user frames of
            // the task that entered the kernel, kept when asked for (were dropped in silence).
            if (opt.kernel_callchain == true && own.exclude_kernel)
                throw Error::usage(
                    "profile: --kernel-callchain with --exclude-kernel: samples taken in user mode "
                    "have no kernel frames");
            const bool kernel = opt.kernel_callchain.value_or(true) && !own.exclude_kernel;
            const bool user = opt.user_callchain.value_or(!own.exclude_user);
            if (!kernel && !user)
                throw Error::usage(std::string("profile: -g records no frame: ") +
                                   (own.exclude_kernel ? "--exclude-kernel" : "--no-kernel-callchain") +
                                   " leaves out the kernel part and " +
                                   (own.exclude_user ? "--exclude-user" : "--no-user-callchain") +
                                   " the user part");
            unwind::request_stacks(a, kernel, user, opt.dwarf_stack);
            stack_kernel = kernel;
            stack_user = user;
            // Flame-graph-only mode: NAME "" with -i (SPEC §4.2).
            folded_stdout_ = opt.flame_graph_given && opt.flame_graph.empty() && opt.interval_ms;
        }
        interval_start_ = core::realtime_now_ns();
        // Each sample stands for a period of 1/F s of CPU time.
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "profile",
                              .stacks = opt.call_graph,
                              .kernel = stack_kernel,
                              .user = stack_user,
                              .pprof_kind = {.type = "samples",
                                             .unit = "count",
                                             .cpu_period_ns = int64_t(1'000'000'000 / freq_),
                                             .period_name = own.off_cpu ? "wall" : "cpu",
                                             .tag_key = own.off_cpu ? "off_cpu" : nullptr}})
            .move_to(printer_, flame_, pprof_);
        if (pprof_) pprof_->main_processes(ctx_.threads());
        plan_top(a, own);
        timeline_ = stack::TimelineSamples::from_options(ctx_, printer_.get());
        // eBPF filters: loaded before any event opens, so a refusal stops the run (SPEC §1.9).
        if (own.ebpf.any()) {
            bpf_ = filter::BpfFilter::load(own.ebpf, opt.verbose);
            ev.bpf_prog = bpf_->prog_fd();
        }
        EventPlan p;
        p.events.push_back(std::move(ev));
        if (own.off_cpu) plan_off_cpu(p, own, stack_kernel, stack_user);
        // SPEC says 2 pages (x2 with -g); at 1000 Hz with stacks that is ~20 samples a ring,
        // lost on any delay. 8 and 32 pages per CPU cost little.
        p.pages = opt.call_graph ? 32 : 8;
        // --off-cpu: a sample with its stack at every switch-out, a record at every switch-in:
        // a storm of 300k switches/s fills 32 pages in a few ms.
        if (own.off_cpu) p.pages = 128;
        p.per_event_wakeup = false;
        return p;
    }

    // SPEC §4.2: on Intel hosts whose TSC frequency is known, reference cycles at the fixed
    // period that makes F samples a second of a busy CPU; elsewhere on hosts, cycles at F;
    // in VMs (and wherever the PMU refuses) the software cpu-clock, which skips idle time.
    // Hardware is probed with a throw-away event: no message either way.
    std::string choose_event(perf_event_attr& a, int verbose) {
        if (!in_vm()) {
            a.type = PERF_TYPE_HARDWARE;
            if (const uint64_t khz = intel() ? perf::tsc_khz() : 0) {
                if (verbose > 0)
                    std::fprintf(ctx_.out(), "tsc_khz = %llu\n", static_cast<unsigned long long>(khz));
                a.config = PERF_COUNT_HW_REF_CPU_CYCLES;
                a.freq = 0;
                a.sample_period = khz * 1000 / freq_;
                if (a.sample_period && hardware_opens(a)) return "ref-cycles";
            }
            a.config = PERF_COUNT_HW_CPU_CYCLES;
            a.freq = 1;
            a.sample_freq = freq_;
            if (hardware_opens(a)) return "cpu-cycles";
        }
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_CPU_CLOCK;
        a.freq = 1;
        a.sample_freq = freq_;
        a.exclude_idle = 1;
        return "cpu-clock";
    }

    void sample(const Sample& s) noexcept override {
        if (off_) {
            if (s.event_index == kSwitchEvent) {
                off_->switched_out(s, uint64_t(prev_state_.read_or(s.raw, s.raw_size, 0)));
                return;
            }
            off_->ran(s.tid, s.time);
            // Weighed by the CPU time it stands for, in the periods the waits are in (the
            // kernel's frequency mode moves the period away from 1/F when a task runs in
            // slices much shorter than it).
            weight_ = period_ns_ ? off_->on_cpu(s.tid, s.period) : 1;
        }
        const size_t inst = s.instance < 0 ? 0 : static_cast<size_t>(s.instance);
        if (inst >= state_.size()) state_.resize(inst + 1);
        if (min_count_ && !busy_enough(state_[inst], s.time)) return;
        print_sample(s, s.period);  // the counter's growth since the event's previous sample
    }

    // Nested in trace (SPEC §2.8): the parent hands each of our samples back to be printed.
    void print_event(const Sample& s) noexcept override { sample(s); }

    void interval() override {
        if (flame_) flame_->flush(folded_stdout_ ? "" : stack::interval_prefix(interval_start_));
        if (top_) print_top_interval();
        interval_start_ = core::realtime_now_ns();
    }

    void context_switch(const ContextSwitch& c) noexcept override {
        if (!off_) return;
        if (c.out)
            off_->left(c.tid, c.time);
        else
            off_->switched_in(c.tid, c.time);
    }

    void lost(const LostRange&) noexcept override {
        if (off_) off_->clear();  // a wait's end (or start) may be among the lost records
    }

    void finish() override {
        // Waits still open end now: the time they lasted so far is time off the CPU.
        if (off_) off_->finish(ctx_.now());
        if (flame_) {
            const bool prefix = !folded_stdout_ && ctx_.options().interval_ms;
            flame_->finish(prefix ? stack::interval_prefix(interval_start_) : "");
        }
        if (pprof_) pprof_->finish();
        if (top_) finish_top();
        if (timeline_) timeline_->close();
    }

private:
    static constexpr int kSwitchEvent = 1;
    static constexpr uint64_t kTopRows = 20;

    // --off-cpu: sched_switch samples the stack each task leaves the CPU with (filtered to
    // leave out the idle task), and its switch records say when the task came back.
    // The table of the hottest functions (issue 29): at exit and every -i, unless -q, --top 0,
    // the folded stacks own stdout (--flame-graph ""), or the samples go to a parent.
    // Without -g a sample's address is its one frame.
    void plan_top(perf_event_attr& a, const ProfileOptions& own) {
        const Options& opt = ctx_.options();
        // The lines are upstream's output: asked for, printed by a parent (nested), or the
        // flame-graph-only mode's folded stacks instead.
        lines_ = (own.print_samples || ctx_.forwarding()) && !folded_stdout_;
        // --print-samples alone is upstream's output: no table unless --top asks for one too.
        top_rows_ = size_t(own.top.value_or(own.print_samples ? 0 : kTopRows));
        // --flame-graph "": stdout is the folded stacks', with or without -i.
        const bool folded_on_stdout = opt.flame_graph_given && opt.flame_graph.empty();
        if (!top_rows_ || opt.verbose < 0 || folded_on_stdout || ctx_.forwarding()) return;
        stack::Printer* printer = printer_.get();
        if (!printer) {
            a.sample_type |= PERF_SAMPLE_IP;
            top_printer_ =
                std::make_unique<stack::Printer>(ctx_.symbolizer(), !own.exclude_kernel, !own.exclude_user);
            printer = top_printer_.get();
        }
        top_ = std::make_unique<stack::TopStacks>(*printer);
    }

    // Each -i tick: the table of the interval, headed by its start time.
    void print_top_interval() {
        // To the millisecond: intervals of -i 100 start several times a second.
        std::string title = core::format_wall(interval_start_).substr(0, 23) + " profile";
        top_->print_interval(ctx_.out(), title, "samples", top_rows_);
        ++top_intervals_;
    }

    // At exit: without -i the run's table; with -i the last interval's (when it holds samples)
    // and then the whole run's.
    void finish_top() {
        if (!ctx_.options().interval_ms) {
            top_->print_total(ctx_.out(), "profile", "samples", top_rows_);
            return;
        }
        if (!top_->interval_empty() || top_intervals_ == 0) print_top_interval();
        top_->print_total(ctx_.out(), "profile, whole run", "samples", top_rows_);
    }

    void plan_off_cpu(EventPlan& p, const ProfileOptions& own, bool kernel, bool user) {
        // The sample_id trailer of every record of the ring is laid out by the first event's
        // sample_type: TID, TIME and CPU here too.
        sched::SwitchEvent e =
            sched::switch_event(ctx_.tep(), PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU, kernel,
                                user, ctx_.options().dwarf_stack);
        prev_state_ = e.prev_state;
        p.events.push_back(std::move(e.spec));
        p.order = true;  // a task leaves one CPU and comes back on another
        off_ = std::make_unique<sched::OffCpu>(
            sched::OffCpu::Config{.min_ns = own.off_cpu_min, .period_ns = 1'000'000'000 / freq_},
            [this](const sched::OffCpu::Wait& w) { count_wait(w); });
    }

    // One finished wait, weighted in sampling periods: into the stack outputs, or printed.
    void count_wait(const sched::OffCpu::Wait& w) {
        if (top_ && w.units) {
            root_.assign("[off-cpu: ");
            (root_ += w.state) += ']';
            top_->add_callchain(w.chain.data(), w.chain.size(), w.pid, root_, w.units);
        }
        std::string_view comm = ctx_.comm(w.pid);
        if (comm == "<...>") comm = {};
        if (flame_ || pprof_) {
            if (!w.units) return;
            if (flame_) {
                root_.assign(comm);
                if (!comm.empty()) root_ += ';';
                ((root_ += "[off-cpu: ") += w.state) += ']';
                flame_->add_callchain(w.chain.data(), w.chain.size(), w.pid, root_, w.units);
            }
            if (pprof_) pprof_->add_callchain(w.chain.data(), w.chain.size(), w.pid, comm, w.units, w.state);
            return;
        }
        if (!lines_) return;
        line_.clear();
        output::append_line_head(ctx_, w.start, w.tid, w.cpu, {}, 0, line_, {});
        ((line_ += "profile: off-cpu ") += w.state) += ' ';
        core::append_fixed3(line_, double(w.ns) / 1e6, 0);
        line_ += " ms\n";
        printer_->print(w.chain.data(), w.chain.size(), w.pid, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    struct Instance {
        uint64_t window_start = 0;  // perf time of the current 1-second window's first sample
        uint64_t count = 0;
    };

    // --than: samples counted in 1-second windows opened by a sample (not printed); a sample
    // is printed once its window holds ceil(F x PCT / 100) of them.
    bool busy_enough(Instance& st, uint64_t t) const {
        if (st.count == 0 || t - st.window_start >= 1'000'000'000ull) {
            st.window_start = t;
            st.count = 1;
            return false;
        }
        return ++st.count >= min_count_;
    }

    void print_sample(const Sample& s, uint64_t period) noexcept {
        FILE* out = ctx_.out();
        if (top_) {
            if (s.callchain)
                top_->add_callchain(s.callchain, s.callchain_nr, s.pid, {}, weight_);
            else
                top_->add_ip(s.ip, s.pid, weight_);
        }
        if (timeline_)
            timeline_->instant(std::string_view(suffix_).substr(1, suffix_.size() - 2), s, false, period);
        if (lines_) {
            line_.clear();
            output::append_line_head(ctx_, s.time, s.tid, s.cpu, {}, 0, line_, s.title);
            line_ += "profile: ";
            core::append_uint(line_, period, 0);
            line_ += suffix_;
            std::fwrite(line_.data(), 1, line_.size(), out);
        }
        if (!s.callchain || !printer_) return;
        if (stack::count_stack(flame_.get(), pprof_.get(), s, ctx_.comm(s.pid), weight_) || !lines_) return;
        line_.clear();
        printer_->print(s.callchain, s.callchain_nr, s.pid, line_);
        std::fwrite(line_.data(), 1, line_.size(), out);
    }

    Context& ctx_;
    uint64_t freq_ = 0, min_count_ = 0;
    std::vector<Instance> state_;
    std::string line_;
    std::string suffix_;  // " cpu-clock\n": the sampled event's name ends each line
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    std::unique_ptr<stack::TimelineSamples> timeline_;
    std::unique_ptr<filter::BpfFilter> bpf_;  // outlives the events it is attached to
    bool lines_ = false;                      // per-sample lines: --print-samples, or nested
    bool folded_stdout_ = false;              // flame-graph-only mode: the folded stacks go to stdout
    std::unique_ptr<sched::OffCpu> off_;      // --off-cpu
    filter::RecordField prev_state_;
    uint64_t weight_ = 1;     // of the sample being counted (--off-cpu: its CPU time in periods)
    bool period_ns_ = false;  // the sampled event's period is ns of CPU time (cpu-clock)
    std::string root_;        // count_wait()'s buffer
    int64_t interval_start_ = 0;
    // The table of the hottest functions: its printer when there is no -g, its rows, and how
    // many intervals it has printed.
    std::unique_ptr<stack::Printer> top_printer_;
    std::unique_ptr<stack::TopStacks> top_;
    size_t top_rows_ = 0;
    int top_intervals_ = 0;
};

}  // namespace

extern const ProfilerInfo profile_info;
const ProfilerInfo profile_info = {
    .name = "profile",
    .summary = "Sample the CPUs: hot spots, stacks, flame graphs.",
    .usage =
        "[OPTION...] -F freq [-g [--off-cpu]] [--top N] [--print-samples] [--flame-graph file] [--pprof file] "
        "[--than PCT] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Sample what runs on the CPUs (or in the attached tasks) F times a second: CPU",
            "    cycles on hosts with a PMU, the cpu-clock software event in VMs. At exit (and",
            "    every -i) it prints the hottest functions as go tool pprof -top does: flat",
            "    (samples in the function itself), cum (in it or what it calls, once per",
            "    stack), sorted by flat; without -g a sample's function is where it was taken.",
            "    --print-samples prints a line per sample instead, as upstream does (the",
            "    counter's growth since the previous one; with -g its call stack). With",
            "    --flame-graph the stacks are counted into a folded flame graph, with",
            "    --pprof into a pprof profile (go tool pprof -top FILE, -http=: FILE).",
            "    With --off-cpu (and -g) the time tasks spend off the CPU is counted too, each",
            "    wait with the stack the task left with, under an [off-cpu: STATE] frame (S, D,",
            "    R preempted, ...) and weighted in sampling periods: a wall-clock profile. A wait",
            "    lasts from the task's sched_switch to its switch-in; system-wide, the idle task",
            "    is left out.",
            "",
            "EXAMPLES",
            "    perf-prof profile -F 997 -C 0-3",
            "    perf-prof profile -F 997 -g --top 40 -i 1000 -- ./workload",
            "    perf-prof profile -F 997 --print-samples -C 0",
            "    perf-prof profile -F 997 -g --flame-graph cpu -- ./workload",
            "    perf-prof profile -F 997 -g --pprof cpu.pb.gz -p 1234",
            "    perf-prof profile -F 997 -g --off-cpu --flame-graph wall -- ./server",
            "    perf-prof profile -F 100 --than 50 --exclude-user",
            "    perf-prof profile -F 997 -g --flame-graph \"\" -i 1000",
            "    perf-prof profile -F 997 --prio 0-99 --exclude_pid 1",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "record call stacks (kernel and user parts by default)"},
            {Opt::FlameGraph},
            {Opt::Pprof},
            {Opt::Timeline,
             "stream each sample to file as an instant with its\nstack (Chrome trace-event JSON)"},
        },
    .create = create_profiler<ProfileProfiler>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
