// blktrace: the latency of each stage of the block requests of one device or partition,
// get-request → insert → issue → complete (SPEC §P21).
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "block/blk_tracker.h"
#include "block/block_device.h"
#include "core/parse.h"
#include "core/time.h"
#include "event/tracepoint.h"
#include "filter/record_field.h"
#include "output/event_line.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/tsc.h"
#include "tep/tep.h"

namespace perfprof {

namespace {

struct BlktraceOptions final : ProfilerOptions {
    std::string device;
    uint64_t than_ns = 0;
};

using Own = OwnOptions<BlktraceOptions>;
const OptionRow kOwnOptions[] = {
    Own::row('d', "device", "path", ArgKind::Value, false, Group::Profiler, "block device node (required)",
             [](BlktraceOptions& o, OptionValue v) { o.device = std::string(*v); }),
    Own::row(0, "than", "TIME", ArgKind::Value, false, Group::Profiler,
             "print the stages longer than TIME (e.g. 10ms) and count them",
             [](BlktraceOptions& o, OptionValue v) {
                 o.than_ns = core::parse_time_ns(*v);
                 if (!o.than_ns)
                     throw Error::usage("option `than' must be above 0, got '" + std::string(*v) + "'");
             }),
};

// The node's disk (and partition range) from its st_rdev and sysfs.
block::BlockDev resolve_device(const std::string& node) {
    struct stat st;
    if (node.empty() || ::stat(node.c_str(), &st) != 0 || !S_ISBLK(st.st_mode))
        throw Error::usage("blktrace: cannot stat " + node);
    return block::resolve_block_device(major(st.st_rdev), minor(st.st_rdev));
}

class Blktrace final : public Profiler {
public:
    explicit Blktrace(Context& ctx) : ctx_(ctx), own_(ctx.options().own_as<BlktraceOptions>()) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        if (!opt.cpus.empty() || !opt.pids.empty() || !opt.tids.empty() || opt.cgroups_given ||
            !opt.workload.empty())
            throw Error::usage(
                "blktrace: -C, -p, -t, --cgroups and a command are not usable (all online CPUs)");
        if (own_.device.empty()) throw Error::usage("blktrace: -d DEVICE is required");
        const block::BlockDev d = resolve_device(own_.device);
        const std::string filter = d.filter();
        if (opt.verbose > 0) std::printf("filter: %s\n", filter.c_str());
        than_ = own_.than_ns;
        if (than_ && ctx_.tsc_time()) {
            const uint64_t khz = perf::tsc_khz();
            if (khz) than_ = than_ / 1000 * khz / 1000;
        }
        EventPlan p;
        for (int s = 0; s < block::kStages; s++) {
            EventSpec ev = event::sampled_tracepoint(
                ctx_.tep(), "block", block::stage_name(s),
                PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW);
            ev.attr.pinned = 1;
            ev.filter = filter;
            fields_[s] = {event::tp_field(ev.tp, "dev", false), event::tp_field(ev.tp, "sector", false),
                          event::tp_field(ev.tp, "nr_sector", false)};
            p.events.push_back(std::move(ev));
        }
        p.pages = 8;
        p.per_event_wakeup = false;
        p.order = true;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        const int v = ctx_.options().verbose;
        const int stage = s.event_index;
        if (stage < 0 || stage >= block::kStages) return;
        if (s.time <= ignore_until_) {
            if (v >= 2) print(s, "");
            return;
        }
        const Fields& f = fields_[stage];
        const uint64_t dev = uint64_t(f.dev.read_or(s.raw, s.raw_size, 0)),
                       sector = uint64_t(f.sector.read_or(s.raw, s.raw_size, -1));
        const uint32_t nr = uint32_t(f.nr.read_or(s.raw, s.raw_size, 0));
        const block::Tracker::Result r = tracker_.on_event(stage, dev, sector, nr, s.time, than_);
        if (v >= 2 || (r.label && (v >= 1 || r.print))) print(s, r.label ? r.label : "");
    }

    void lost(const LostRange& l) noexcept override {
        tracker_.clear();
        ignore_until_ = std::max(ignore_until_, l.end ? l.end : l.start);
    }

    void interval() override { table(); }
    void finish() override { table(); }

private:
    struct Fields {
        filter::RecordField dev, sector, nr;
    };

    void print(const Sample& s, const char* label) {
        line_.clear();
        output::format_event_line(ctx_, s, line_);
        if (*label && line_.size() > 27) line_.insert(27, label);  // after WALL(ev) and its space
        std::fwrite(line_.data(), 1, line_.size(), ctx_.out());
    }

    void table() {
        std::string out;
        core::append_wall(core::realtime_now_ns(), out);
        out += '\n';
        out += tracker_.table(ctx_.tsc_time() ? "kcyc" : "us", than_ != 0, ::isatty(fileno(ctx_.out())) != 0);
        std::fwrite(out.data(), 1, out.size(), ctx_.out());
        std::fflush(ctx_.out());
    }

    Context& ctx_;
    const BlktraceOptions& own_;
    uint64_t than_ = 0, ignore_until_ = 0;
    Fields fields_[block::kStages];
    block::Tracker tracker_;
    std::string line_;
};

}  // namespace

extern const ProfilerInfo blktrace_info;
const ProfilerInfo blktrace_info = {
    .name = "blktrace",
    .summary = "Latency of each stage of the block requests of one device.",
    .usage = "-d DEVICE [OPTION...] [--than TIME]",
    .body =
        {
            "SYNOPSIS",
            "    Follows the requests of one block device or partition through block:block_getrq,",
            "    block_rq_insert, block_rq_issue and block_rq_complete on all online CPUs, and",
            "    prints the delay of each stage every interval and at exit. A partition's disk comes",
            "    from sysfs, its range is [start, start+size) (sector<end), and a node that cannot",
            "    be stat'ed is an error (SPEC Recommendations).",
            "",
            "TRACEPOINT",
            "    block:block_getrq, block:block_rq_insert, block:block_rq_issue, block:block_rq_complete",
            "",
            "EXAMPLES",
            "    perf-prof blktrace -d /dev/vda -i 1000 --than 10ms",
        },
    .create = create_profiler<Blktrace>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
