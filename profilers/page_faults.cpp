// page-faults: every page fault, with its address and faulting instruction, optionally its
// call stack and user registers (SPEC-PROFILERS §P8). Also the printer of its samples when
// nested in trace or multi-trace (SPEC §2.8).
#include <linux/perf_event.h>

#include <cstdio>
#include <memory>
#include <string>

#include "hw/hw_print.h"
#include "hw/hw_stack.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

struct PageFaultsOptions final : ProfilerOptions {
    bool exclude_user = false, exclude_kernel = false;
};

using Own = OwnOptions<PageFaultsOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "exclude-user", "", ArgKind::Flag, false, Group::Filter, "faults taken in kernel mode only",
             [](PageFaultsOptions& o, OptionValue v) { o.exclude_user = flag_value(v); }),
    Own::row(0, "exclude-kernel", "", ArgKind::Flag, false, Group::Filter, "faults taken in user mode only",
             [](PageFaultsOptions& o, OptionValue v) { o.exclude_kernel = flag_value(v); }),
};

class PageFaults final : public Profiler {
public:
    explicit PageFaults(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const PageFaultsOptions& own = opt.own_as<PageFaultsOptions>();
        if (own.exclude_user && own.exclude_kernel)
            throw Error::usage("page-faults: --exclude-user and --exclude-kernel leave no fault to trace");
        EventSpec ev;
        ev.sys = "software";
        ev.name = "page-faults";
        ev.kind = EventKind::Other;
        perf_event_attr& a = ev.attr;
        a.size = sizeof(a);
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_PAGE_FAULTS;
        a.sample_period = 1;
        a.sample_type =
            PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU;
        a.pinned = 1;
        a.exclude_user = own.exclude_user;
        a.exclude_kernel = own.exclude_kernel;
        if (opt.call_graph) {
            const bool kernel = opt.kernel_callchain.value_or(true), user = opt.user_callchain.value_or(true);
            if (!kernel && !user)
                throw Error::usage(
                    "page-faults: -g with --no-kernel-callchain and --no-user-callchain records no frame");
            unwind::request_stacks(a, kernel, user, opt.dwarf_stack);
            // The user registers at the fault (the dwarf unwinder's set when it asked for one).
            a.sample_type |= PERF_SAMPLE_REGS_USER;
            if (!a.sample_regs_user) a.sample_regs_user = hw::kX86GeneralRegs;
            printer_ = stack::stack_outputs(opt, ctx_.symbolizer(),
                                            {.profiler = "page-faults",
                                             .stacks = true,
                                             .kernel = kernel,
                                             .user = user,
                                             .flame = false})
                           .printer;
        }
        // Processed as they come (no --watermark): the faulting process still exists and its
        // user ips are symbolized; in batches they are printed raw (SPEC §P8).
        user_symbols_ = !opt.watermark;
        EventPlan p;
        p.events.push_back(std::move(ev));
        // SPEC says 2 pages (x2 with -g): 170 faults, which a program touching fresh memory
        // makes in microseconds, before the reader is scheduled. 16 pages (64 with stacks).
        p.pages = opt.call_graph ? 64 : 16;
        p.per_event_wakeup = true;
        return p;
    }

    void sample(const Sample& s) noexcept override { print_event(s); }

    void print_event(const Sample& s) noexcept override {
        line_.clear();
        hw::append_head(ctx_, s.time, s.tid, s.cpu, line_, s.title);
        line_ += "page-fault: addr ";
        append_hex16(s.addr);
        line_ += " ip ";
        hw::append_ip(ctx_.symbolizer(), s.pid, s.ip, user_symbols_, line_);
        line_ += '\n';
        if (printer_ && s.callchain)
            hw::append_stack_with_regs(*printer_, s.callchain, s.callchain_nr, s.pid,
                                       stack::max_stack_of(s.event->attr), s.event->attr.sample_regs_user,
                                       s.user_abi ? s.user_regs : nullptr, hw::RegsAt::UserPart, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

private:
    void append_hex16(uint64_t v) {
        char buf[20];
        std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
        line_ += buf;
    }

    Context& ctx_;
    std::unique_ptr<stack::Printer> printer_;  // with -g
    bool user_symbols_ = true;
    std::string line_;
};

}  // namespace

extern const ProfilerInfo page_faults_info;
const ProfilerInfo page_faults_info = {
    .name = "page-faults",
    .summary = "Trace page faults: address, instruction, stack and user registers.",
    .usage = "[OPTION...] [--exclude-user|--exclude-kernel] [-g] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Print every page fault (the software event page-faults) on the CPUs or in the",
            "    attached tasks: the faulting address and instruction. With -g also the call",
            "    stack, and the user registers at the fault where the user part starts.",
            "    User instructions are shown by symbol while faults are handled as they come;",
            "    with --watermark (handled in batches) as raw addresses. Nested in trace or",
            "    multi-trace (-e page-faults/OPTIONS/) it prints its faults among their events.",
            "",
            "EXAMPLES",
            "    perf-prof page-faults -C 0 --exclude-user -N 100",
            "    perf-prof page-faults -C 0 -g --exclude-user -N 100",
            "    perf-prof page-faults --exclude-kernel -g -p 1234",
            "    perf-prof trace -e 'sched:sched_switch,page-faults/-N 10/'",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "print the call stack and user registers (kernel and user parts by default)"},
        },
    .create = create_profiler<PageFaults>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
