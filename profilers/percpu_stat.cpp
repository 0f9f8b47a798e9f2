// percpu-stat: a fixed dashboard of per-CPU event counts per interval (SPEC-PROFILERS §P18).
#include <memory>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/time.h"
#include "counters/group_plan.h"
#include "counters/percpu_table.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "tep/tep.h"

namespace perfprof {
namespace {

struct PercpuOptions final : ProfilerOptions {
    bool syscalls = false;  // --syscalls
};

using Own = OwnOptions<PercpuOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "syscalls", "", ArgKind::Flag, false, Group::Profiler, "also count raw_syscalls:sys_enter",
             [](PercpuOptions& o, OptionValue v) { o.syscalls = flag_value(v); }),
};

struct Column {
    const char* header;
    const char* sys;  // nullptr: a software event
    const char* name;
    uint64_t config;  // PERF_COUNT_SW_*
};

const Column kColumns[] = {
    {" SOFT csw", nullptr, "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-mig", nullptr, "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minflt", nullptr, "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"majflt", nullptr, "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {" syscalls", "raw_syscalls", "sys_enter", 0},
    {" hardirq", "irq", "irq_handler_entry", 0},
    {"softirq", "irq", "softirq_entry", 0},
    {"hrtimer", "timer", "hrtimer_expire_entry", 0},
    {"workqueue", "workqueue", "workqueue_execute_start", 0},
    {" KVM exit", "kvm", "kvm_exit", 0},
    {" NET recv", "net", "netif_receive_skb", 0},
    {" xmit", "net", "net_dev_xmit", 0},
    {"gro", "net", "napi_gro_receive_entry", 0},
    {" MM alloc", "kmem", "mm_page_alloc", 0},
    {"compact", "compaction", "mm_compaction_migratepages", 0},
    {"reclaim", "vmscan", "mm_vmscan_direct_reclaim_begin", 0},
    {"migrate", "migrate", "mm_migrate_pages", 0},
    {" PAGE cache", "filemap", "mm_filemap_add_to_page_cache", 0},
    {" WB pages", "writeback", "wbc_writepage", 0},
    {" idle", "power", "cpu_idle", 0},
};

class PercpuStat final : public Profiler {
public:
    explicit PercpuStat(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        // Recommendation of §P18: per-CPU counters only.
        if (attaches_tasks(opt))
            throw Error::usage("percpu-stat counts per CPU: -p, -t and a command are not supported");
        const bool syscalls = opt.own_as<PercpuOptions>().syscalls;
        EventPlan p;
        for (const Column& c : kColumns) {
            EventSpec ev;
            if (!c.sys) {
                ev.sys = "software";
                ev.name = c.name;
                ev.kind = EventKind::Other;
                ev.attr.size = sizeof(ev.attr);
                ev.attr.type = PERF_TYPE_SOFTWARE;
                ev.attr.config = c.config;
            } else {
                if (std::string(c.sys) == "raw_syscalls" && !syscalls) continue;
                if (!ctx_.tep().has_event(c.sys, c.name)) continue;  // missing: skipped silently
                auto r = event::resolve_event_list(std::string(c.sys) + ":" + c.name, ctx_.tep(), 0,
                                                   profiler_names());
                if (r.empty()) continue;
                ev = event::planned_event(r[0], false, false, false);
            }
            ev.attr.sample_period = 0;
            ev.attr.sample_type = 0;
            ev.attr.read_format = 0;
            ev.attr.pinned = 0;
            ev.attr.disabled = 0;
            ev.attr.watermark = 0;
            ev.attr.wakeup_events = 0;
            if (!p.events.empty()) ev.group_leader = 0;
            headers_.emplace_back(c.header);
            halved_.emplace_back(std::string_view(c.name) == "cpu_idle");
            p.events.push_back(std::move(ev));
        }
        p.pages = 1;  // counting only
        p.interval_ms = 1000;
        return p;
    }

    void sample(const Sample&) noexcept override {}

    void interval() override {
        const int n = ctx_.instances();
        if (!table_) {
            std::vector<std::string> labels;
            for (int i = 0; i < n; ++i) {
                std::string l = "[";
                core::append_uint(l, uint64_t(std::max(ctx_.instance_cpu(i), 0)), 3, '0');
                labels.push_back(l + "]");
            }
            table_ = std::make_unique<counters::PercpuTable>(headers_, halved_, std::move(labels));
        }
        for (int i = 0; i < n; ++i)
            for (size_t c = 0; c < headers_.size(); ++c)
                table_->update(size_t(i), c,
                               ctx_.read_counter(int(c), i, words_) && !words_.empty() ? words_[0] : 0);
        std::string wall = core::format_wall(core::realtime_now_ns());
        wall += ' ';
        out_.clear();
        table_->print(wall, out_);
        std::fwrite(out_.data(), 1, out_.size(), ctx_.out());
        std::fflush(ctx_.out());
    }

private:
    Context& ctx_;
    std::vector<std::string> headers_;
    std::vector<bool> halved_;
    std::unique_ptr<counters::PercpuTable> table_;
    std::vector<uint64_t> words_;
    std::string out_;
};

}  // namespace

extern const ProfilerInfo percpu_stat_info;
const ProfilerInfo percpu_stat_info = {
    .name = "percpu-stat",
    .summary = "Per-CPU counts of context switches, faults, IRQs, timers, network, memory, idle.",
    .usage = "[OPTION...] [--syscalls]",
    .body = {"SYNOPSIS", "    Every -i (default 1000 ms), one row per CPU and an [ALL] row of what each",
             "    counter counted since the previous tick. Tracepoints the kernel lacks are",
             "    left out. CPUs only: -p, -t and a command are refused (the Recommendation",
             "    of the specification; upstream accepted them). idle counts cpu_idle halved.", "",
             "EXAMPLES", "    perf-prof percpu-stat -i 1000",
             "    perf-prof percpu-stat --syscalls -C 0-1 -i 2000"},
    .options = {},
    .create = create_profiler<PercpuStat>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
