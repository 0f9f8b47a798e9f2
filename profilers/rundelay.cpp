// rundelay: run-queue latency per task (SPEC-PROFILERS §P4), a preset of multi-trace's driver
// (lib/pairing/driver): implementation delay, ordering on, the keys and kernel filters of §P4's
// table, and the attach rewrite (threads kept for the filters, rings on every CPU).
#include <optional>
#include <string>
#include <vector>

#include "filter/task_filter.h"
#include "pairing/driver.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

const OptionRow kOwnOptions[] = {pairing::rows::than, pairing::rows::detail, pairing::rows::heatmap};

class RundelayProfiler final : public pairing::PresetProfiler {
public:
    explicit RundelayProfiler(Context& ctx) : PresetProfiler(ctx), ctx_(ctx) {}

    pairing::Preset preset() override {
        const Options& opt = ctx_.options();
        by_name_ = !opt.filter.empty();
        pairing::Preset p;
        p.name = "rundelay";
        p.impl = "delay";
        // pages: multi-trace's 1 MiB a CPU, not SPEC's 64 pages that lose events under a burst.
        p.order = true;
        p.system_wide = true;  // scheduler events of the tasks happen on every CPU
        p.key_name = "THREAD";
        p.key_width = 6;  // Recommendation (§P4): upstream's 3 lets pids overflow the column
        p.comm_column = true;
        p.thread_keys = true;  // pid, prev_pid, next_pid
        p.auto_key = [this](const pairing::AutoEvent& e) { return key(e); };
        p.auto_filter = [this](const pairing::AutoEvent& e) { return filter(e); };
        p.check = [this] {
            if (found_ != 4)
                throw Error::usage("rundelay filter failed, found " + std::to_string(found_) +
                                   " matching events.");
        };
        return p;
    }

private:
    enum class Role { None, Wakeup, SwitchOut, SwitchIn };

    static Role role(const pairing::AutoEvent& e) {
        const event::EventItem& it = e.r.item;
        if (it.kind == event::Kind::Profiler || it.sys != "sched") return Role::None;
        if (e.list == 0 && (it.name == "sched_wakeup" || it.name == "sched_wakeup_new")) return Role::Wakeup;
        if (e.list == 0 && it.name == "sched_switch") return Role::SwitchOut;
        if (e.list == 1 && it.name == "sched_switch") return Role::SwitchIn;
        return Role::None;
    }

    std::string key(const pairing::AutoEvent& e) {
        switch (role(e)) {
            case Role::Wakeup:
                return found_++, "pid";
            case Role::SwitchOut:
                return found_++, "prev_pid";
            case Role::SwitchIn:
                return found_++, "next_pid";
            case Role::None:
                break;
        }
        return {};
    }

    // The tasks: --filter names win over the attached threads; "" = every task.
    std::string select(const std::string& side) const {
        const Options& opt = ctx_.options();
        if (by_name_) return filter::comm_filter(opt.filter, side + "comm");
        if (!ctx_.threads().empty()) return filter::pid_filter(ctx_.threads(), side + "pid");
        return {};
    }

    std::optional<std::string> filter(const pairing::AutoEvent& e) const {
        switch (role(e)) {
            case Role::Wakeup: {
                std::string f = select("");
                return f.empty() ? std::nullopt : std::optional<std::string>(f);
            }
            case Role::SwitchOut: {
                // A runnable task switched out: 256 (TASK_REPORT_MAX, preempted in the kernel,
                // "R+") or 0 (switched out on its way back to user space, "R"; most of a CPU
                // hog's on 6.18, which SPEC's prev_state==256 alone misses).
                const std::string f = select("prev_");
                const std::string runnable = "(prev_state==0||prev_state==256)";
                return f.empty() ? runnable + "&&prev_pid>0" : runnable + " && (" + f + ")";
            }
            case Role::SwitchIn: {
                std::string f = select("next_");
                return f.empty() ? std::nullopt : std::optional<std::string>(f);
            }
            case Role::None:
                break;
        }
        return std::nullopt;
    }

    Context& ctx_;
    bool by_name_ = false;
    int found_ = 0;
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    return pairing::help_template(opt, events, "rundelay", "delay");
}

}  // namespace

extern const ProfilerInfo rundelay_info;
const ProfilerInfo rundelay_info = {
    .name = "rundelay",
    .summary =
        "Run-queue latency per task: wake-up or preemption to switch-in (multi-trace delay with "
        "automatic keys and filters).",
    .usage =
        "-e sched:sched_wakeup*,sched:sched_switch -e sched:sched_switch[,AUX...] [--filter COMMS | -p "
        "PID...] "
        "[--than TIME] [--detail[=LIST]] [--perins] [--heatmap NAME] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    multi-trace --impl delay with the keys and kernel filters set: sched_wakeup*",
            "    key pid, sched_switch of position 1 key prev_pid (preempted tasks only:",
            "    prev_state 0 or 256), sched_switch of position 2 key next_pid. --filter (task",
            "    name patterns) or the attached tasks select them; the rings are on every",
            "    CPU (the tasks are kept by filter), ordering is on. -v prints the filters.",
            "",
            "    Recommendations followed (SPEC §P4): the Trick line is printed once; with",
            "    --perins the THREAD column is 6 wide.",
            "",
            "EXAMPLES",
            "    perf-prof rundelay -e sched:sched_wakeup*,sched:sched_switch -e sched:sched_switch -i 1000 --perins",
            "    perf-prof rundelay -e sched:sched_wakeup*,sched:sched_switch -e sched:sched_switch --filter python \\",
            "        --than 4ms --detail=samekey",
        },
    .options =
        {
            {Opt::Event, "sched:sched_wakeup*,sched:sched_switch, then sched:sched_switch"},
            {Opt::UserCallchain, "user stacks too, for events with the stack attribute"},
            {Opt::KernelCallchain},
            {Opt::Perins, "statistics per task"},
            {Opt::Timeline, "stream each wait to file as a slice on its task's track\n(Chrome trace-event JSON)"},
            {Opt::Filter, "task name patterns (e.g. python,ssh*): only these tasks"},
        },
    .create = create_profiler<RundelayProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = OwnOptions<pairing::Settings>::make,
};

}  // namespace perfprof
