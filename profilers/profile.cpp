// profile: periodic CPU sampling with stacks and flame graphs (SPEC §4.2).
#include <cpuid.h>
#include <linux/perf_event.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "filter/bpf_filter.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "perf/event_list.h"
#include "perf/tsc.h"
#include "stack/flame_graph.h"
#include "stack/stack_printer.h"

namespace perfprof {

namespace {

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
        if (opt.freq == 0) throw Error::usage("profile: -F freq is required");
        if (opt.exclude_user && opt.exclude_kernel)
            throw Error::usage("profile: --exclude-user and --exclude-kernel leave nothing to sample");
        if (opt.exclude_guest && opt.exclude_host)
            throw Error::usage("profile: --exclude-guest and --exclude-host leave nothing to sample");
        freq_ = opt.freq;
        if (opt.than) min_count_ = (freq_ * static_cast<uint64_t>(*opt.than) + 99) / 100;

        EventSpec ev;
        ev.sys = "profile";
        ev.kind = EventKind::Other;
        perf_event_attr& a = ev.attr;
        a.size = sizeof(a);
        a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_READ;
        a.read_format = 0;  // the READ value is the running counter
        a.exclude_user = opt.exclude_user;
        a.exclude_kernel = opt.exclude_kernel;
        a.exclude_guest = opt.exclude_guest;
        a.exclude_host = opt.exclude_host;
        ev.name = choose_event(a, opt.verbose);
        if (opt.verbose > 0)
            std::fprintf(ctx_.out(), "profile: sampling %s at %llu Hz\n", ev.name.c_str(),
                         static_cast<unsigned long long>(freq_));
        suffix_ = " " + ev.name + "\n";
        // Stacks: kernel and user halves by default (SPEC §4.2).
        if (opt.call_graph) {
            const bool kernel = opt.kernel_callchain.value_or(true) && !opt.exclude_kernel;
            const bool user = opt.user_callchain.value_or(true) && !opt.exclude_user;
            a.sample_type |= PERF_SAMPLE_CALLCHAIN;
            a.exclude_callchain_kernel = !kernel;
            a.exclude_callchain_user = !user;
            printer_ = std::make_unique<stack::Printer>(kernel, user);
            if (opt.flame_graph_given) {
                flame_ = std::make_unique<stack::FlameGraph>(opt.flame_graph);
                interval_start_ = core::realtime_now_ns();
                // Flame-graph-only mode: NAME "" with -i (SPEC §4.2).
                lines_ = !(opt.flame_graph.empty() && opt.interval_ms);
            }
        }
        // eBPF filters: loaded before any event opens, so a refusal stops the run (SPEC §1.9).
        if (opt.ebpf.any()) {
            bpf_ = filter::BpfFilter::load(opt.ebpf, opt.verbose);
            ev.bpf_prog = bpf_->prog_fd();
        }
        EventPlan p;
        p.events.push_back(std::move(ev));
        // SPEC says 2 pages (x2 with -g); at 1000 Hz with stacks that is ~20 samples a ring,
        // lost on any delay. 8 and 32 pages per CPU cost little.
        p.pages = opt.call_graph ? 32 : 8;
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
        const size_t inst = s.instance < 0 ? 0 : static_cast<size_t>(s.instance);
        if (inst >= state_.size()) state_.resize(inst + 1);
        Instance& st = state_[inst];
        // The counter's growth since this instance's previous sample (all of it the first time).
        const uint64_t delta = s.read_value >= st.last_value ? s.read_value - st.last_value : 0;
        st.last_value = s.read_value;
        if (min_count_ && !busy_enough(st, s.time)) return;
        print_sample(s, delta);
    }

    // Nested in trace (SPEC §2.8): the parent hands each of our samples back to be printed.
    void print_event(const Sample& s) noexcept override { sample(s); }

    void interval() override {
        if (!flame_) return;
        flame_->flush(lines_ ? stack::interval_prefix(interval_start_) : "");
        interval_start_ = core::realtime_now_ns();
    }

    void finish() override {
        if (!flame_) return;
        const bool prefix = lines_ && ctx_.options().interval_ms;
        flame_->finish(prefix ? stack::interval_prefix(interval_start_) : "");
    }

private:
    struct Instance {
        uint64_t last_value = 0;
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

    void print_sample(const Sample& s, uint64_t delta) noexcept {
        FILE* out = ctx_.out();
        if (lines_) {
            line_.clear();
            output::append_line_head(ctx_, s.time, s.tid, s.cpu, {}, 0, line_);
            line_ += "profile: ";
            core::append_uint(line_, delta, 0);
            line_ += suffix_;
            std::fwrite(line_.data(), 1, line_.size(), out);
        }
        if (!s.callchain || !printer_) return;
        if (flame_) {
            // Root frame: the process name, omitted when unresolved.
            const std::string_view comm = ctx_.comm(s.pid);
            flame_->add_callchain(*printer_, s.callchain, s.callchain_nr, s.pid, comm != "<...>" ? comm : "",
                                  line_);
        } else {
            line_.clear();
            printer_->print(s.callchain, s.callchain_nr, s.pid, 127, line_);
            std::fwrite(line_.data(), 1, line_.size(), out);
        }
    }

    Context& ctx_;
    uint64_t freq_ = 0, min_count_ = 0;
    std::vector<Instance> state_;
    std::string line_;
    std::string suffix_;  // " cpu-clock\n": the sampled event's name ends each line
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<filter::BpfFilter> bpf_;  // outlives the events it is attached to
    bool lines_ = true;                       // per-sample lines (all but the flame-graph-only mode)
    int64_t interval_start_ = 0;
};

std::unique_ptr<Profiler> create(Context& ctx) {
    return std::make_unique<ProfileProfiler>(ctx);
}

}  // namespace

extern const ProfilerInfo profile_info;
const ProfilerInfo profile_info = {
    "profile",
    "Sample the CPUs: hot spots, stacks, flame graphs.",
    "[OPTION...] -F freq [-g [--flame-graph file]] [--than PCT] [[--] <command>]",
    {
        "SYNOPSIS",
        "    Sample what runs on the CPUs (or in the attached tasks) F times a second: CPU",
        "    cycles on hosts with a PMU, the cpu-clock software event in VMs. Each sample",
        "    prints the counter's growth since the previous one; with -g its call stack, or",
        "    with --flame-graph the stacks are counted into a folded flame graph.",
        "",
        "EXAMPLES",
        "    perf-prof profile -F 997 -C 0-3",
        "    perf-prof profile -F 997 -g --flame-graph cpu -- ./workload",
        "    perf-prof profile -F 100 --than 50 --exclude-user",
        "    perf-prof profile -F 997 -g --flame-graph \"\" -i 1000",
        "    perf-prof profile -F 997 --prio 0-99 --exclude_pid 1",
    },
    {
        {Opt::UserCallchain},
        {Opt::KernelCallchain},
        {Opt::ExcludeUser},
        {Opt::ExcludeKernel},
        {Opt::ExcludeGuest},
        {Opt::ExcludeHost},
        {Opt::IrqsDisabled},
        {Opt::TifNeedResched},
        {Opt::ExcludePid},
        {Opt::NrRunningMin},
        {Opt::NrRunningMax},
        {Opt::SchedPolicy},
        {Opt::Prio},
        {Opt::Freq},
        {Opt::CallGraph, "record call stacks (kernel and user parts by default)"},
        {Opt::FlameGraph},
        {Opt::Than},
    },
    create,
};

}  // namespace perfprof
