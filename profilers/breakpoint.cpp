// breakpoint: hardware data and instruction breakpoints (up to 4) on kernel or user
// addresses; every hit with its registers and optional stack (SPEC-PROFILERS §P12).
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hw/breakpoint_addr.h"
#include "hw/hw_print.h"
#include "hw/hw_stack.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/event_list.h"
#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_outputs.h"
#include "stack/stack_printer.h"
#include "unwind/call_graph.h"

namespace perfprof {

namespace {

struct BreakpointOptions final : ProfilerOptions {
    bool exclude_user = false, exclude_kernel = false;
};

using Own = OwnOptions<BreakpointOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "exclude-user", "", ArgKind::Flag, false, Group::Filter, "hits in kernel mode only",
             [](BreakpointOptions& o, OptionValue v) { o.exclude_user = flag_value(v); }),
    Own::row(0, "exclude-kernel", "", ArgKind::Flag, false, Group::Filter, "hits in user mode only",
             [](BreakpointOptions& o, OptionValue v) { o.exclude_kernel = flag_value(v); }),
};

class BreakpointProfiler final : public Profiler {
public:
    explicit BreakpointProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const BreakpointOptions& own = opt.own_as<BreakpointOptions>();
        bps_ = hw::parse_breakpoints(opt.words);
        // The written value is decoded from the storing instruction, read through /proc/kcore
        // (SPEC §P12); this version does not decode, so a filter on it cannot be honoured.
        if (opt.filter_given)
            throw Error::usage(
                "breakpoint: --filter needs the values written, decoded from the kernel's code through "
                "/proc/kcore, which this version does not do");
        if (own.exclude_user && own.exclude_kernel)
            throw Error::usage("breakpoint: --exclude-user and --exclude-kernel leave no hit to trace");
        bool kernel = false, user = false;
        if (opt.call_graph) {
            kernel = opt.kernel_callchain.value_or(true);
            user = opt.user_callchain.value_or(true);
            if (!kernel && !user)
                throw Error::usage(
                    "breakpoint: -g with --no-kernel-callchain and --no-user-callchain records no frame");
        }
        EventPlan p;
        for (const hw::Breakpoint& bp : bps_) {
            EventSpec ev;
            ev.sys = "breakpoint";
            ev.name = label(bp);
            ev.kind = EventKind::Other;
            perf_event_attr& a = ev.attr;
            a.size = sizeof(a);
            a.type = PERF_TYPE_BREAKPOINT;
            a.bp_addr = bp.addr;
            a.bp_type = bp.type;
            a.bp_len = bp.len;
            a.sample_period = 1;
            a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                            PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_INTR;
            a.sample_regs_intr = hw::kX86GeneralRegs;
            a.pinned = 1;
            a.exclude_user = own.exclude_user;
            a.exclude_kernel = own.exclude_kernel;
            if (opt.call_graph) unwind::request_stacks(a, kernel, user, opt.dwarf_stack);
            // A pure write breakpoint: hits of several CPUs are printed in time order (SPEC §P12).
            if (bp.type == HW_BREAKPOINT_W) p.order = true;
            refused_execute(a);
            if (opt.verbose > 0) {
                char buf[80];
                std::snprintf(buf, sizeof(buf), "%#llx len %u type %s\n",
                              static_cast<unsigned long long>(bp.addr), bp.len,
                              hw::type_letters(bp.type).c_str());
                std::fputs(buf, ctx_.out());
            }
            p.events.push_back(std::move(ev));
        }
        stack::stack_outputs(opt, ctx_.symbolizer(),
                             {.profiler = "breakpoint",
                              .stacks = opt.call_graph,
                              .kernel = kernel,
                              .user = user,
                              .flame_count = "hits",
                              .flame = opt.call_graph})
            .move_to(printer_, flame_, pprof_);
        user_symbols_ = !opt.watermark;
        regs_ = opt.verbose >= 0;
        // SPEC says 1 page (x2 with -g): 18 hits with their registers, fewer than a loop
        // writing the watched variable makes before the reader runs. 8 (16 with stacks).
        p.pages = opt.call_graph ? 16 : 8;
        p.per_event_wakeup = true;
        p.order = p.order || opt.order;
        return p;
    }

    void sample(const Sample& s) noexcept override { print_event(s); }

    void print_event(const Sample& s) noexcept override {
        if (s.event_index < 0 || size_t(s.event_index) >= bps_.size()) return;
        const hw::Breakpoint& bp = bps_[size_t(s.event_index)];
        const uint64_t mask = s.event->attr.sample_regs_intr;
        const uint64_t* regs = s.intr_abi ? s.intr_regs : nullptr;
        // The trapping ip from the sampled RIP: more reliable than the sample's IP in a VM.
        uint64_t ip = s.ip;
        if (uint64_t rip = 0; hw::reg_value(mask, regs, hw::kIP, rip)) ip = rip;
        line_.clear();
        hw::append_head(ctx_, s.time, s.tid, s.cpu, line_, s.title);
        line_ += "breakpoint: ";
        line_ += label(bp);
        line_ += " ip ";
        hw::append_ip(ctx_.symbolizer(), s.pid, ip, user_symbols_, line_);
        line_ += '\n';
        const bool counted =
            s.callchain && stack::count_stack(flame_.get(), pprof_.get(), s, ctx_.comm(s.pid));
        if (s.callchain && printer_ && !counted)
            hw::append_stack_with_regs(*printer_, s.callchain, s.callchain_nr, s.pid,
                                       stack::max_stack_of(s.event->attr), mask, regs_ ? regs : nullptr,
                                       hw::RegsAt::KernelPart, line_);
        else if (regs_)
            hw::append_regs_block(mask, regs, line_);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    void finish() override {
        if (flame_) flame_->finish("");
        if (pprof_) pprof_->finish();
    }

private:
    // x86 refuses execute breakpoints on kernel code where kprobes may not go, and everywhere
    // in a kernel built without kprobes (within_kprobe_blacklist() is then always true), as the
    // target kernel is (SPEC-PROFILERS §P22: no kprobe PMU). Probed once on ourselves, so the
    // refusal has a clear message instead of the open's bare EINVAL.
    static void refused_execute(const perf_event_attr& want) {
        if (want.bp_type != HW_BREAKPOINT_X || !hw::kernel_address(want.bp_addr)) return;
        perf_event_attr a = want;
        a.disabled = 1;
        a.exclude_kernel = 0;
        if (perf::open_on_self(a) || errno != EINVAL) return;
        char buf[200];
        std::snprintf(buf, sizeof(buf),
                      "breakpoint: the kernel refuses an execute breakpoint at %#llx: kernel code takes "
                      "them only where kprobes may go, and this kernel has no kprobes",
                      static_cast<unsigned long long>(want.bp_addr));
        throw Error(buf, "break on a user-space address, or on kernel data with :w");
    }

    // "{addr:#x}/{len}:{TYPE}"
    static std::string label(const hw::Breakpoint& bp) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%#llx/%u:", static_cast<unsigned long long>(bp.addr), bp.len);
        return buf + hw::type_letters(bp.type);
    }

    Context& ctx_;
    std::vector<hw::Breakpoint> bps_;  // by event index
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<stack::FlameGraph> flame_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    bool user_symbols_ = true;
    bool regs_ = true;  // the register block, unless -q
    std::string line_;
};

}  // namespace

extern const ProfilerInfo breakpoint_info;
const ProfilerInfo breakpoint_info = {
    .name = "breakpoint",
    .summary = "Hardware breakpoints: every read, write or execution of up to 4 addresses.",
    .usage = "[OPTION...] [-g [--flame-graph file]] <addr>[/1/2/4/8][:rwx] ...",
    .body =
        {
            "SYNOPSIS",
            "    Set up to 4 hardware breakpoints (x86's debug registers) and print every hit:",
            "    the task, the instruction that hit (by symbol in the kernel; in user space",
            "    while hits are handled as they come) and the registers at the hit (not with",
            "    -q). With -g also the call stack, the registers where its kernel part starts;",
            "    with --flame-graph the stacks are counted into a flame graph instead.",
            "",
            "    <addr>  decimal (starting with 1-9) or 0x hexadecimal address",
            "    /LEN    bytes watched: 1, 2, 4 or 8 (default 1)",
            "    :TYPE   r (read, which x86 watches with writes), w (default), x (execute,",
            "            sizeof(long) bytes); a pure write breakpoint prints hits in time order.",
            "",
            "    Not implemented: decoding the value a kernel write stored (it reads the",
            "    kernel's code through /proc/kcore): --filter on that value is refused.",
            "",
            "EXAMPLES",
            "    perf-prof breakpoint 0x$(grep -w try_to_wake_up /proc/kallsyms | cut -c1-16):x -g -N 2",
            "    perf-prof breakpoint -p 1234 0x55d0c0de4010/4:w",
        },
    .options =
        {
            {Opt::UserCallchain},
            {Opt::KernelCallchain},
            {Opt::CallGraph, "print the call stack (kernel and user parts by default)"},
            {Opt::FlameGraph},
            {Opt::Filter, "refused: the written value is not decoded (no /proc/kcore)"},
        },
    .create = create_profiler<BreakpointProfiler>,
    .takes_words = true,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
