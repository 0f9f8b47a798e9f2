// syscalls: system-call latency and errors per syscall (SPEC-PROFILERS §P5), a preset of
// multi-trace's driver (lib/pairing/driver) with the syscalls implementation (§4.6.10): key
// common_pid and ordering on CPUs (no key on threads), and sched:sched_process_free closing the
// pending sys_enter of a task freed inside a syscall (its pid read by name from the format).
#include <string>
#include <vector>

#include "filter/record_field.h"
#include "pairing/driver.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

const OptionRow kOwnOptions[] = {pairing::rows::than, pairing::rows::heatmap};

constexpr const char* kUse = "Please use -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit";

class SyscallsProfiler final : public pairing::PresetProfiler {
public:
    explicit SyscallsProfiler(Context& ctx) : PresetProfiler(ctx), ctx_(ctx) {}

    pairing::Preset preset() override {
        if (ctx_.options().events.size() != 2) throw Error::usage(kUse);
        const bool cpus = ctx_.threads().empty();
        pairing::Preset p;
        p.name = "syscalls";
        p.impl = "syscalls";
        // pages: multi-trace's 1 MiB a CPU, not SPEC's 64 pages that lose events under a burst.
        p.order = cpus;  // a task's sys_enter and sys_exit may be on different CPUs
        p.thread_keys = true;  // common_pid, or each attached thread
        p.auto_key = [this, cpus](const pairing::AutoEvent& e) {
            if (e.r.item.kind == event::Kind::Profiler || e.r.item.sys != "raw_syscalls" ||
                (e.r.item.name != "sys_enter" && e.r.item.name != "sys_exit"))
                throw Error::usage(kUse);
            ++found_;
            return cpus ? std::string("common_pid") : std::string();
        };
        p.check = [this] {
            if (found_ != 2) throw Error::usage(kUse);
        };
        p.extra = {{"sched", "sched_process_free"}};
        p.on_extra = [this](const Sample& s, const EventSpec& spec) { freed(s, spec); };
        return p;
    }

private:
    // A task freed: its pending sys_enter ends here (SPEC §4.6.10).
    void freed(const Sample& s, const EventSpec& spec) noexcept {
        if (!pid_.ok) pid_ = filter::RecordField::integer(spec.fields, "pid");
        if (!pid_.ok) return;
        const int64_t pid = pid_.read_or(s.raw, s.raw_size, -1);
        if (pid > 0) driver_.close(uint64_t(pid), s.time);
    }

    Context& ctx_;
    int found_ = 0;
    filter::RecordField pid_;
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    return pairing::help_template(opt, events, "syscalls", "syscalls");
}

}  // namespace

extern const ProfilerInfo syscalls_info;
const ProfilerInfo syscalls_info = {
    .name = "syscalls",
    .summary = "System-call latency and error counts per syscall (and per thread with --perins).",
    .usage =
        "-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit [--than TIME] [--perins] [OPTION...] "
        "[[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    multi-trace --impl syscalls: calls, total/min/avg/max latency and errors",
            "    (ret in [-4095, -1]) per syscall. On CPUs the key is common_pid and ordering",
            "    is on; on threads each thread is its own key. A task freed inside a syscall",
            "    (sched:sched_process_free) ends its pending call.",
            "",
            "EXAMPLES",
            "    perf-prof syscalls -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -i 1000 -C 1 --perins",
            "    perf-prof syscalls -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit --than 10ms -p 1234",
        },
    .options =
        {
            {Opt::Event, "raw_syscalls:sys_enter, then raw_syscalls:sys_exit (filters allowed)"},
            {Opt::UserCallchain, "user stacks too, for events with the stack attribute"},
            {Opt::KernelCallchain},
            {Opt::Perins, "statistics per thread"},
            {Opt::Timeline, "stream each call to file as a slice named by its syscall\non its thread's track (Chrome trace-event JSON)"},
        },
    .create = create_profiler<SyscallsProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = OwnOptions<pairing::Settings>::make,
};

}  // namespace perfprof
