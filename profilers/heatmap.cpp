// heatmap: draw a latency heat-map file (SPEC §8.1, `{time} {latency}` lines) as an SVG on
// stdout. Runs no session.

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/parse.h"
#include "flamegraph/heatmap.h"
#include "flamegraph/svg.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

namespace fg = flamegraph;

struct HeatmapCmdOptions final : ProfilerOptions {
    fg::HeatmapOptions hm;
    bool title_given = false;
    bool subtitle_given = false;
    // In the file's units, converted once the units are known (the options come in any order).
    std::string step, min, max;
};

int pixels(OptionValue v, const char* option) {
    return int(core::parse_bounded(*v, option, 1000000));
}

std::string unit_name(OptionValue v, const char* option) {
    const std::string_view s = *v;
    bool ok = !s.empty() && s.size() <= 16;
    for (char c : s) ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_');
    if (!ok)
        throw Error::usage("option `" + std::string(option) + "' expects a unit name of up to 16 letters");
    return std::string(s);
}

using K = ArgKind;
using G = Group;
using Own = OwnOptions<HeatmapCmdOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "title", "TEXT", K::Value, false, G::Profiler, "the picture's title (Latency Heat Map)",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.title = std::string(*v); }),
    Own::row(0, "subtitle", "TEXT", K::Value, false, G::Profiler, "the line under the title (the file name)",
             [](HeatmapCmdOptions& o, OptionValue v) {
                 o.hm.subtitle = std::string(*v);
                 o.subtitle_given = true;
             }),
    Own::row(0, "width", "PX", K::Value, false, G::Profiler, "width of the picture (1200)",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.width = pixels(v, "width"); }),
    Own::row(0, "height", "PX", K::Value, false, G::Profiler, "height of the cell area (500)",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.height = pixels(v, "height"); }),
    Own::row(0, "rows", "N", K::Value, false, G::Profiler, "latency rows, 1 to 500 (50)",
             [](HeatmapCmdOptions& o, OptionValue v) {
                 o.hm.rows = int(core::parse_bounded(*v, "rows", 1000000));
             }),
    Own::row(0, "columns", "N", K::Value, false, G::Profiler,
             "at most N time columns, 1 to 2000, when --step is\n"
             "not given (200)",
             [](HeatmapCmdOptions& o, OptionValue v) {
                 o.hm.max_columns = int(core::parse_bounded(*v, "columns", 1000000));
             }),
    Own::row(0, "step", "TIME", K::Value, false, G::Profiler,
             "time per column, e.g. 10ms (a bare number is in\n"
             "the file's time unit); default: a round step",
             [](HeatmapCmdOptions& o, OptionValue v) { o.step = std::string(*v); }),
    Own::row(0, "min", "LATENCY", K::Value, false, G::Profiler,
             "the bottom row's lower bound, e.g. 100us; smaller\n"
             "latencies are counted in the bottom row",
             [](HeatmapCmdOptions& o, OptionValue v) { o.min = std::string(*v); }),
    Own::row(0, "max", "LATENCY", K::Value, false, G::Profiler,
             "the top row's upper bound, e.g. 10ms; larger\n"
             "latencies are counted in the top row",
             [](HeatmapCmdOptions& o, OptionValue v) { o.max = std::string(*v); }),
    Own::row(0, "log", "", K::Flag, false, G::Profiler, "latency rows on a log scale (the default)",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.log = flag_value(v); }),
    Own::row(0, "linear", "", K::Flag, false, G::Profiler, "latency rows on a linear scale",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.log = !flag_value(v); }),
    Own::row(0, "units-time", "UNIT", K::Value, false, G::Profiler,
             "the file's time unit: ns (default), us, ms, s, or\n"
             "any name, shown as is",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.time_unit = unit_name(v, "units-time"); }),
    Own::row(0, "units-latency", "UNIT", K::Value, false, G::Profiler,
             "the file's latency unit, as --units-time",
             [](HeatmapCmdOptions& o, OptionValue v) { o.hm.latency_unit = unit_name(v, "units-latency"); }),
};

// An option's TIME in the file's unit: a bare number is taken as it is; one with a suffix
// (s, ms, us, ns) must be a whole number of the file's unit.
uint64_t in_unit(const std::string& text, const std::string& unit, const char* option) {
    if (!text.empty() && text.back() >= '0' && text.back() <= '9') return core::parse_count(text, option);
    const uint64_t per = fg::unit_ns(unit);
    if (per == 0)
        throw Error::usage("option `" + std::string(option) + "': the file's unit '" + unit +
                           "' is not a time unit, give a bare number");
    const uint64_t ns = core::parse_time_ns(text);
    if (ns % per)
        throw Error::usage("option `" + std::string(option) + "': '" + text + "' is not a whole number of " +
                           unit);
    return ns / per;
}

int draw_heatmap(const Options& opt) {
    const std::vector<std::string>& words = opt.workload;
    if (words.size() != 1)
        throw Error::usage(words.empty()
                               ? "heatmap needs a FILE.lat, or - for stdin (see 'perf-prof heatmap -h')"
                               : "heatmap takes one FILE.lat, options before it ('" + words[1] +
                                     "' came after '" + words[0] + "'; see 'perf-prof heatmap -h')");
    const HeatmapCmdOptions& own = opt.own_as<HeatmapCmdOptions>();
    fg::HeatmapOptions hm = own.hm;
    fg::check_heatmap_options(hm);
    if (!own.step.empty()) {
        hm.step = in_unit(own.step, hm.time_unit, "step");
        if (hm.step == 0) throw Error::usage("option `step' must be above 0");
    }
    if (!own.min.empty()) hm.min_latency = in_unit(own.min, hm.latency_unit, "min");
    if (!own.max.empty()) hm.max_latency = in_unit(own.max, hm.latency_unit, "max");

    const std::string& path = words.front();
    const std::string name = path == "-" ? "stdin" : path;
    if (!own.subtitle_given) hm.subtitle = name;
    fg::LatFile file = fg::read_lat_file(path);
    const std::string first_bad =
        name + ":" + std::to_string(file.first_bad_line) + ": " + file.first_problem;
    if (file.points.empty()) {
        if (file.bad_lines == 0) throw Error(name + ": no '{time} {latency}' lines, nothing to draw");
        throw Error(first_bad + " (" + std::to_string(file.bad_lines) + " bad " +
                    (file.bad_lines == 1 ? "line" : "lines") + ", no good one: nothing to draw)");
    }
    const std::string svg = fg::render_heatmap(file.points, hm);
    // The picture is drawn: the skipped lines are reported in one line.
    if (file.bad_lines)
        std::fprintf(stderr, "perf-prof: %s (%llu bad %s skipped)\n", first_bad.c_str(),
                     static_cast<unsigned long long>(file.bad_lines), file.bad_lines == 1 ? "line" : "lines");
    fg::write_file("", svg);
    return 0;
}

}  // namespace

extern const ProfilerInfo heatmap_info;
const ProfilerInfo heatmap_info = {
    .name = "heatmap",
    .kind = ProfilerInfo::Kind::Command,
    .summary = "Draw a latency heat-map file (.lat) as an SVG.",
    .usage = "[OPTION...] FILE.lat|- > out.svg",
    .body =
        {
            "SYNOPSIS",
            "    Read `{time} {latency}' lines (what multi-trace --heatmap writes, both in ns)",
            "    and print an SVG heat map: time since the first point on x, latency rows on y",
            "    (log, or linear with --linear), the count of points per cell as colour. Pointing",
            "    at a cell shows its time range, latency range and count. Latencies outside",
            "    --min/--max are counted in the edge rows and reported in the header line.",
            "    A bad line is skipped and reported on stderr; with no good line, nothing is",
            "    drawn and the exit status is 1.",
            "",
            "EXAMPLES",
            "    perf-prof heatmap lat-sched_wakeup-sched_switch.lat > wakeup.svg",
            "    perf-prof heatmap --rows 60 --step 100ms irq.lat > irq.svg",
            "    perf-prof heatmap --linear --min 0 --max 2ms --title 'Disk I/O' - < io.lat > io.svg",
        },
    .run_words = draw_heatmap,
    .global_options = false,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
