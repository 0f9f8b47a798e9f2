// oncpu: which tasks ran on each CPU and for how long (sched_switch), or on which CPUs each
// attached thread ran (sched_stat_runtime), every interval (SPEC §P3).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/parse.h"
#include "core/time.h"
#include "event/tracepoint.h"
#include "filter/record_field.h"
#include "filter/task_filter.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "sched/oncpu.h"
#include "tep/tep.h"

namespace perfprof {

namespace {

struct OncpuOptions final : ProfilerOptions {
    bool detail = false, only_comm = false;
    std::vector<int> prio;  // --prio, ascending, unique
    std::string prio_text;
};

using Own = OwnOptions<OncpuOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "detail", "", ArgKind::OptionalValue, false, Group::Profiler,
             "CPU mode: also the number of runs and the longest run;\n"
             "thread mode: a no-op (needs the vendor kernel's\n/proc/PID/sched_vmf_sib)",
             [](OncpuOptions& o, OptionValue v) {
                 // the same option as multi-trace's --detail[=LIST]: here a flag
                 if (v)
                     throw Error::usage("option `detail' takes no value here, got '" + std::string(*v) + "'");
                 o.detail = true;
             }),
    Own::row(0, "only-comm", "", ArgKind::Flag, false, Group::Profiler,
             "aggregate by task name instead of tid",
             [](OncpuOptions& o, OptionValue v) { o.only_comm = flag_value(v); }),
    Own::row(0, "prio", "LIST", ArgKind::Value, false, Group::Profiler,
             "CPU mode: only tasks of these priorities\n(0-139, e.g. 1-99,120), by kernel filter",
             [](OncpuOptions& o, OptionValue v) {
                 o.prio = core::parse_id_list(*v, "prio", 139);
                 o.prio_text = std::string(*v);
             }),
};

struct TpField {
    uint32_t off = 0, size = 0;
    bool dynamic = false;
};

TpField tp_field(tep_event* ev, const char* name) {
    tep_format_field* f = tep_find_field(ev, name);
    if (!f) throw Error(std::string("sched:") + ev->name + " has no field " + name);
    return {uint32_t(f->offset), uint32_t(f->size), (f->flags & TEP_FIELD_IS_DYNAMIC) != 0};
}

// A char[N] or __data_loc char[] field, up to its NUL.
std::string_view str_field(const TpField& f, const Sample& s) {
    const auto* raw = static_cast<const char*>(s.raw);
    uint32_t off = f.off, len = f.size;
    if (f.dynamic) {
        if (s.raw_size < f.off + 4) return {};
        uint32_t loc;
        std::memcpy(&loc, raw + f.off, 4);
        off = loc & 0xffff;
        len = loc >> 16;
    }
    if (off + len > s.raw_size) return {};
    return {raw + off, strnlen(raw + off, len)};
}

class Oncpu final : public Profiler {
public:
    explicit Oncpu(Context& ctx) : ctx_(ctx), own_(ctx.options().own_as<OncpuOptions>()) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        threads_ = !ctx_.threads().empty();
        if (threads_ && !own_.prio.empty())
            std::fprintf(stderr, "WARN: --prio is only valid when bound to cpu\n");
        if (!threads_ && !own_.prio.empty() && opt.filter_given)
            throw Error::usage("--prio and --filter are mutually exclusive");
        use_prio_ = !threads_ && !own_.prio.empty();
        EventSpec ev = event::sampled_tracepoint(
            ctx_.tep(), "sched", threads_ ? "sched_stat_runtime" : "sched_switch",
            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW);
        ev.attr.pinned = 1;
        if (threads_) {
            comm_ = tp_field(ev.tp, "comm");
            pid_ = event::tp_field(ev.tp, "pid");
            runtime_ = event::tp_field(ev.tp, "runtime");
            runtime_.is_signed = false;
        } else {
            comm_ = tp_field(ev.tp, "prev_comm");
            prev_pid_ = event::tp_field(ev.tp, "prev_pid");
            next_pid_ = event::tp_field(ev.tp, "next_pid");
            prev_prio_ = event::tp_field(ev.tp, "prev_prio");
        }
        if (opt.filter_given) ev.filter = opt.filter;
        if (use_prio_) {
            in_prio_.assign(140, false);
            for (int p : own_.prio) in_prio_[size_t(p)] = true;
            ev.filter = "(" + filter::pid_filter(own_.prio, "prev_prio") + ") || (" +
                        filter::pid_filter(own_.prio, "next_prio") + ")";
        }
        if (opt.verbose > 0 && !ev.filter.empty()) std::printf("filter: %s\n", ev.filter.c_str());
        EventPlan p;
        p.events.push_back(std::move(ev));
        p.pages = 4;
        p.per_event_wakeup = false;
        p.interval_ms = 1000;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (threads_) {
            const int pid = int(pid_.read_or(s.raw, s.raw_size, -1));
            if (ctx_.options().verbose >= 2 || (pid != int(s.tid) && ctx_.options().verbose == 1))
                print_event(s);
            if (pid != int(s.tid)) return;
            trun_.add(pid, s.cpu, str_field(comm_, s), uint64_t(runtime_.read_or(s.raw, s.raw_size, 0)));
            return;
        }
        if (ctx_.options().verbose >= 2) print_event(s);
        const int prev = int(prev_pid_.read_or(s.raw, s.raw_size, 0));
        bool ok = true;
        if (use_prio_) {
            const int64_t pr = prev_prio_.read_or(s.raw, s.raw_size, -1);
            ok = pr >= 0 && pr < 140 && in_prio_[size_t(pr)];
        }
        cpus_.on_switch(s.cpu, s.time, prev, int(next_pid_.read_or(s.raw, s.raw_size, 0)),
                        str_field(comm_, s), ok, own_.only_comm);
    }

    void print_event(const Sample& s) noexcept override {
        line_.clear();
        output::format_event_line(ctx_, s, line_);
        // a bare EVENT LINE (SPEC §P3): without the WALL(ev) head and its space
        if (s.title.empty() && line_.size() > 27) line_.erase(0, 27);
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    void lost(const LostRange& l) noexcept override {
        if (threads_) return;
        if (ctx_.options().order) {
            std::fprintf(stderr, "oncpu: the correctness when lost cannot be guaranteed.\n");
            return;
        }
        if (l.cpu >= 0) cpus_.lost(uint32_t(l.cpu));
    }

    void interval() override { print(); }
    void finish() override { print(); }

private:
    void print() {
        std::string t = threads_ ? trun_.table(ctx_.threads()) : cpus_.table(own_.detail, own_.only_comm);
        if (t.empty()) return;
        std::string out;
        core::append_wall(core::realtime_now_ns(), out);
        out += '\n';
        out += t;
        std::fwrite(out.data(), 1, out.size(), ctx_.out());
        std::fflush(ctx_.out());
    }

    Context& ctx_;
    const OncpuOptions& own_;
    bool threads_ = false, use_prio_ = false;
    TpField comm_;
    filter::RecordField pid_, runtime_, prev_pid_, next_pid_, prev_prio_;
    std::vector<bool> in_prio_;
    sched::CpuRuns cpus_;
    sched::ThreadRuns trun_;
    std::string line_;
};

}  // namespace

extern const ProfilerInfo oncpu_info;
const ProfilerInfo oncpu_info = {
    .name = "oncpu",
    .summary = "Which tasks run on each CPU, and on which CPUs each thread runs.",
    .usage = "[OPTION...] [--detail] [--filter FILTER] [--only-comm] [--prio LIST] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Every interval (default -i 1000), per CPU the tasks that ran there and for how long",
            "    (sched:sched_switch), or, attached to threads (-p, -t, a command), per thread the",
            "    CPUs it ran on (sched:sched_stat_runtime). --detail in thread mode is a no-op here:",
            "    it needs the vendor kernel's /proc/PID/sched_vmf_sib (SPEC Recommendation).",
            "",
            "TRACEPOINT",
            "    sched:sched_switch, sched:sched_stat_runtime",
            "",
            "EXAMPLES",
            "    perf-prof oncpu -C 0",
            "    perf-prof oncpu --prio 1-99",
            "    perf-prof oncpu -t 1234",
        },
    .options = {{Opt::Filter, "kernel filter on the event (CPU mode: sched_switch)"}},
    .create = create_profiler<Oncpu>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
