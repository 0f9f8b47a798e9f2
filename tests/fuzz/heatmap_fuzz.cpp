// libFuzzer target for latency heat maps (flamegraph/heatmap.h, SPEC §8.1 .lat files).
//
// Input: 6 option bytes, then .lat text. The text is fed to LatParser in chunks whose sizes come
// from the option bytes (so lines split across chunks are exercised) and must give the same
// result as parse_lat on the whole text. Any points are binned and drawn with options taken from
// the bytes (rows, columns, log, explicit step and latency bounds from the points themselves).
// perfprof::Error is an expected outcome of options that cannot be met; anything else (crash,
// sanitizer report, hang, other exception) is a finding, as is a picture that is not one
// complete document or that draws a cell count different from the points binned.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "flamegraph/heatmap.h"
#include "perf-prof/error.h"

using namespace perfprof::flamegraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 6) return 0;
    const uint8_t* o = data;
    const std::string_view text(reinterpret_cast<const char*>(data + 6), size - 6);

    LatParser parser;
    const size_t chunk = 1 + o[0] % 64;
    for (size_t i = 0; i < text.size(); i += chunk) parser.feed(text.substr(i, chunk));
    const LatFile f = parser.finish();
    const LatFile whole = parse_lat(text);
    if (f.points.size() != whole.points.size() || f.bad_lines != whole.bad_lines ||
        f.first_bad_line != whole.first_bad_line || f.first_problem != whole.first_problem)
        std::abort();
    if (f.points.empty()) return 0;

    HeatmapOptions opt;
    opt.rows = 1 + o[1] % 64;
    opt.max_columns = 1 + o[2] % 256;
    opt.log = o[3] & 1;
    if (o[3] & 2) opt.step = 1 + f.points.back().time % 1000003;
    if (o[3] & 4) opt.min_latency = f.points.front().latency;
    if (o[3] & 8) opt.max_latency = f.points.back().latency;
    if (o[3] & 16) opt.time_unit = "us";
    if (o[3] & 32) opt.latency_unit = "cycles";
    opt.width = 300 + o[4] * 10;
    opt.height = 50 + o[5] * 4;
    try {
        const HeatmapGrid g = bin_points(f.points, opt);
        uint64_t total = 0;
        for (uint64_t n : g.counts) total += n;
        if (total != f.points.size() || g.columns < 1 || g.columns > kMaxHeatmapColumns) std::abort();
        const std::string svg = render_heatmap(g, opt);
        if (svg.rfind("<?xml", 0) != 0 || svg.size() < 7 || svg.compare(svg.size() - 7, 7, "</svg>\n") != 0)
            std::abort();
    } catch (const perfprof::Error&) {
    }
    return 0;
}
