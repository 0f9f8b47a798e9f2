// multi-trace: the latency (or pairing, memory, syscall statistics) between the events of
// successive -e positions, correlated by a key (SPEC §4.6). lib/pairing/driver plans the events
// (positions, keys, outputs) and drives lib/pairing/feed → pairer → the implementation (lib/pairing/);
// this file is its option table and help. rundelay, syscalls and kmemprof configure the same
// driver with presets.
#include <string>
#include <vector>

#include "pairing/driver.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

const OptionRow kOwnOptions[] = {
    pairing::rows::key,       pairing::rows::impl,  pairing::rows::than,
    pairing::rows::only_than, pairing::rows::lower, pairing::rows::detail,
    pairing::rows::heatmap,   pairing::rows::cycle, pairing::rows::hist,
};

class MultiTraceProfiler final : public pairing::PresetProfiler {
public:
    explicit MultiTraceProfiler(Context& ctx) : PresetProfiler(ctx) {}

    pairing::Preset preset() override { return {}; }
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    return pairing::help_template(opt, events, "multi-trace", "");
}

}  // namespace

extern const ProfilerInfo multi_trace_info;
const ProfilerInfo multi_trace_info = {
    .name = "multi-trace",
    .summary =
        "Latency between events: pair the events of successive -e lists by key; statistics, "
        "slow pairs with the events around them, heat maps.",
    .usage =
        "-e EVENT[,EVENT...] -e EVENT[,EVENT...] [-e ...] [-k EXPR] [--impl IMPL] [--than TIME] "
        "[--detail[=LIST]] [--perins] [--heatmap NAME] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Each -e is a position; its events are alternatives. An event of one position",
            "    and the next event of the following position with the same key form a pair:",
            "    -e A,B -e C -e D pairs A->C, B->C, C->D. The key is the event's key=EXPR,",
            "    else -k EXPR, else the CPU (or the thread, with -p/-t/a command).",
            "",
            "    EVENT: sys:name[/filter/ATTR/ATTR/.../]  or  profiler[/options/ATTR/.../]",
            "    ATTR: key=EXPR, role=EXPR (bit 0: may start a pair, bit 1: may end one),",
            "          untraced (shown by --detail, never paired), trigger (print the table",
            "          now), alias=NAME, printkey=EXPR, size=EXPR (kmemprof), stack, max-stack=N",
            "    Keys on several CPUs need --order.",
            "",
            "EXAMPLES",
            "    perf-prof multi-trace -e irq:softirq_entry/vec==1/ -e irq:softirq_exit/vec==1/ -i 1000",
            "    perf-prof multi-trace -e 'sched:sched_wakeup,sched:sched_wakeup_new' \\",
            "        -e 'sched:sched_switch//key=next_pid/' -k pid --order --than 4ms",
            "    perf-prof multi-trace -e syscalls:sys_enter_read -e syscalls:sys_exit_read -p 1234 --perins",
            // One help line, longer than the source's: two literals joined on purpose.
            // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
            "    perf-prof multi-trace -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit --impl syscalls -- "
            "ls",
            "    perf-prof multi-trace -e A -e B --than 1ms --detail=samecpu,-100us,+100us --order",
        },
    .options =
        {
            {Opt::Event, "one position of events; give -e once per position"},
            {Opt::UserCallchain, "user stacks too, for events with the stack attribute"},
            {Opt::KernelCallchain},
            {Opt::Perins, "statistics per key"},
            {Opt::Timeline,
             "stream each pair to file as a slice on its key's track,\n"
             "--detail's events as instants (Chrome trace-event JSON)"},
        },
    .create = create_profiler<MultiTraceProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = OwnOptions<pairing::Settings>::make,
};

}  // namespace perfprof
