#include "flamegraph/heatmap.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "perf-prof/error.h"

using namespace perfprof::flamegraph;

namespace {

std::vector<LatPoint> pts(std::initializer_list<std::pair<uint64_t, uint64_t>> v) {
    std::vector<LatPoint> out;
    for (auto [t, l] : v) out.push_back({t, l});
    return out;
}

// (column, row) -> count of every drawn cell, read back from the SVG's data-* attributes.
std::map<std::pair<int, int>, uint64_t> drawn_cells(const std::string& svg) {
    std::map<std::pair<int, int>, uint64_t> cells;
    static const std::regex rect(R"re(<rect [^>]*data-t="(\d+)" data-l="(\d+)" data-n="(\d+)")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it)
        cells[{std::stoi((*it)[1]), std::stoi((*it)[2])}] += std::stoull((*it)[3]);
    return cells;
}

// Explicit rows, column step and latency range.
HeatmapOptions fixed(int rows, uint64_t step, uint64_t min, uint64_t max, bool log = false) {
    HeatmapOptions o;
    o.rows = rows;
    o.step = step;
    o.min_latency = min;
    o.max_latency = max;
    o.log = log;
    return o;
}

}  // namespace

// ---- parser

TEST(LatParse, GoodLinesBlankLinesAndWhitespace) {
    const LatFile f = parse_lat("100 5\n\n  200\t7  \r\n300 0\n   \n400 18446744073709551615");
    ASSERT_EQ(f.points.size(), 4u);
    EXPECT_EQ(f.points[0].time, 100u);
    EXPECT_EQ(f.points[0].latency, 5u);
    EXPECT_EQ(f.points[1].time, 200u);
    EXPECT_EQ(f.points[1].latency, 7u);
    EXPECT_EQ(f.points[2].latency, 0u);
    EXPECT_EQ(f.points[3].latency, UINT64_MAX);
    EXPECT_EQ(f.lines, 6u);
    EXPECT_EQ(f.bad_lines, 0u);
    EXPECT_EQ(f.first_bad_line, 0u);
}

TEST(LatParse, BadLinesAreCountedWithTheFirstLineNumber) {
    const LatFile f = parse_lat("1 2\nabc def\n3 4\n-5 6\n7\n8 9 10\n1.5 2\n99999999999999999999 1\n");
    ASSERT_EQ(f.points.size(), 2u);
    EXPECT_EQ(f.bad_lines, 6u);
    EXPECT_EQ(f.first_bad_line, 2u);
    EXPECT_NE(f.first_problem.find("'abc' is not an unsigned decimal integer"), std::string::npos)
        << f.first_problem;

    EXPECT_EQ(parse_lat("1 2\n-5 6\n").first_problem, "'-5' is not an unsigned decimal integer");
    EXPECT_EQ(parse_lat("7\n").first_problem, "expected '{time} {latency}', found 1 field");
    EXPECT_EQ(parse_lat("8 9 10\n").first_problem, "expected '{time} {latency}', found 3 fields");
    EXPECT_EQ(parse_lat("1 99999999999999999999\n").first_problem,
              "'99999999999999999999' is too large (above 2^64-1)");
    // Control bytes never reach a message.
    EXPECT_EQ(parse_lat(std::string("1 2\x01\x7f\n")).first_problem,
              "'2?"
              "?' is not an unsigned decimal integer");
}

TEST(LatParse, EmptyTextHasNoPoints) {
    for (const char* text : {"", "\n", "\n\n  \n"}) {
        const LatFile f = parse_lat(text);
        EXPECT_TRUE(f.points.empty());
        EXPECT_EQ(f.bad_lines, 0u);
    }
}

TEST(LatParse, ChunksSplitAnywhereGiveTheSameResult) {
    const std::string text = "10 1\n20 22\n\nx y\n30 333\n40 4444";
    for (size_t chunk = 1; chunk <= text.size(); chunk++) {
        LatParser p;
        for (size_t i = 0; i < text.size(); i += chunk) p.feed(std::string_view(text).substr(i, chunk));
        const LatFile f = p.finish();
        ASSERT_EQ(f.points.size(), 4u) << chunk;
        EXPECT_EQ(f.points[3].time, 40u);
        EXPECT_EQ(f.points[3].latency, 4444u);
        EXPECT_EQ(f.bad_lines, 1u);
        EXPECT_EQ(f.first_bad_line, 4u);
    }
}

TEST(LatParse, AnOverlongLineIsOneBadLineAndNeverKept) {
    LatParser p;
    p.feed("1 2\n");
    const std::string junk(1 << 20, '7');
    for (int i = 0; i < 64; i++) p.feed(junk);  // 64 MiB without a newline
    p.feed("\n3 4\n");
    p.feed(junk);  // and an unterminated one at the end
    const LatFile f = p.finish();
    ASSERT_EQ(f.points.size(), 2u);
    EXPECT_EQ(f.bad_lines, 2u);
    EXPECT_EQ(f.first_bad_line, 2u);
    EXPECT_EQ(f.first_problem, "line longer than 128 characters");
    EXPECT_EQ(f.lines, 4u);
}

// ---- binning

TEST(HeatmapBin, LinearRowsAndColumnsWithExplicitBounds) {
    const HeatmapOptions o = fixed(3, 1000, 0, 300);
    // Times 5000.., so column c holds [5000 + 1000c, 6000 + 1000c).
    const auto p = pts({{5000, 0}, {5999, 99}, {6000, 100}, {6500, 199}, {7999, 200}, {7000, 300}});
    const HeatmapGrid g = bin_points(p, o);
    EXPECT_EQ(g.t0, 5000u);
    EXPECT_EQ(g.columns, 3);
    EXPECT_EQ(g.rows, 3);
    EXPECT_EQ(g.edges, (std::vector<uint64_t>{0, 100, 200, 300}));
    EXPECT_EQ(g.count(0, 0), 2u);
    EXPECT_EQ(g.count(1, 1), 2u);
    EXPECT_EQ(g.count(2, 2), 2u);  // 200 and the top edge 300, which belongs to the top row
    EXPECT_EQ(g.max_count, 2u);
    EXPECT_EQ(g.below + g.above, 0u);
}

TEST(HeatmapBin, OutOfRangeLatenciesAreClampedAndCounted) {
    const HeatmapOptions o = fixed(2, 10, 100, 200);
    const HeatmapGrid g = bin_points(pts({{0, 5}, {0, 99}, {0, 100}, {0, 201}, {0, UINT64_MAX}}), o);
    EXPECT_EQ(g.count(0, 0), 3u);
    EXPECT_EQ(g.count(0, 1), 2u);
    EXPECT_EQ(g.below, 2u);
    EXPECT_EQ(g.above, 2u);
    EXPECT_NE(
        render_heatmap(g, o).find("2 below 100 ns counted in the bottom row; 2 above 200 ns counted in the "
                                  "top row"),
        std::string::npos);
}

TEST(HeatmapBin, LinearRoundBoundsFromTheData) {
    HeatmapOptions o;
    o.log = false;
    o.rows = 50;
    const HeatmapGrid g = bin_points(pts({{0, 37}, {1, 3'870'000}}), o);
    // 3.87 ms over 50 rows needs 77.4 us per row: the next round width is 80 us.
    EXPECT_EQ(g.edges.front(), 0u);
    EXPECT_EQ(g.edges[1], 80'000u);
    EXPECT_EQ(g.edges.back(), 4'000'000u);
    EXPECT_EQ(g.row_of(3'870'000), 48);
    EXPECT_EQ(g.row_of(37), 0);
}

TEST(HeatmapBin, LogRowsAreEquallySpacedInLogLatency) {
    const HeatmapOptions o = fixed(3, 1, 1000, 1'000'000, true);
    const HeatmapGrid g = bin_points(
        pts({{0, 0}, {0, 999}, {0, 5000}, {0, 10'000}, {0, 99'999}, {0, 100'000}, {0, 1'000'000}}), o);
    EXPECT_EQ(g.edges, (std::vector<uint64_t>{1000, 10'000, 100'000, 1'000'000}));
    EXPECT_EQ(g.count(0, 0), 3u);  // 0 and 999 clamped, 5000
    EXPECT_EQ(g.count(0, 1), 2u);  // 10000, 99999
    EXPECT_EQ(g.count(0, 2), 2u);  // 100000 and the top edge
    EXPECT_EQ(g.below, 2u);
}

TEST(HeatmapBin, LogRoundBoundsAndLatencyZero) {
    HeatmapOptions o;  // log is the default
    o.rows = 10;
    const HeatmapGrid g = bin_points(pts({{0, 0}, {1, 3'400}, {2, 7'100'000}}), o);
    EXPECT_EQ(g.edges.front(), 2'000u);  // 1/2/5 × 10^k around the smallest positive and the largest
    EXPECT_EQ(g.edges.back(), 10'000'000u);
    EXPECT_EQ(g.row_of(0), 0);
    EXPECT_EQ(g.below, 1u);
    for (size_t r = 1; r < g.edges.size(); r++) EXPECT_GE(g.edges[r], g.edges[r - 1]);
}

TEST(HeatmapBin, AutomaticStepIsRoundAndBoundsTheColumns) {
    HeatmapOptions o;
    const HeatmapGrid g = bin_points(pts({{1'000'000'000, 1}, {3'500'000'000, 2}}), o);
    EXPECT_EQ(g.step, 20'000'000u);  // 2.5 s / 200 columns = 12.5 ms: the next 1/2/5 step
    EXPECT_EQ(g.columns, 126);
    EXPECT_EQ(g.count(125, g.row_of(2)), 1u);

    o.max_columns = 10;
    EXPECT_LE(bin_points(pts({{0, 1}, {999, 1}}), o).columns, 10);
    EXPECT_EQ(bin_points(pts({{0, 1}, {1000, 1}}), o).step, 200u);
}

TEST(HeatmapBin, DegenerateInputs) {
    HeatmapOptions o;
    o.log = false;
    // One point; every latency equal; times out of order; the extremes of uint64.
    EXPECT_EQ(bin_points(pts({{42, 7}}), o).columns, 1);
    const HeatmapGrid same = bin_points(pts({{3, 500}, {1, 500}, {2, 500}}), o);
    EXPECT_EQ(same.t0, 1u);
    EXPECT_EQ(same.points, 3u);
    o.log = true;
    const HeatmapGrid same_log = bin_points(pts({{3, 500}, {1, 500}}), o);
    EXPECT_LT(same_log.edges.front(), same_log.edges.back());
    EXPECT_EQ(same_log.count(0, same_log.row_of(500)) + same_log.count(2, same_log.row_of(500)), 2u);
    EXPECT_EQ(bin_points(pts({{0, 0}, {0, 0}}), o).count(0, 0), 2u);
    // One column cannot span 2^64-1: two do (found by tests/fuzz/heatmap_fuzz).
    o.max_columns = 1;
    EXPECT_EQ(bin_points(pts({{0, 1}, {UINT64_MAX, 1}}), o).columns, 2);
    o.max_columns = 200;
    // A latency range below one label step: 44 ns over 50 px wants labels 22 ns apart, and
    // the next round step is 50 ns (the linear label loop once wrapped around).
    o.log = false;
    o.height = 50;
    o.max_latency = 44;
    EXPECT_FALSE(render_heatmap(pts({{0, 0}, {1, 1}}), o).empty());
    o.max_latency.reset();
    const auto huge = pts({{0, 0}, {UINT64_MAX, UINT64_MAX}, {UINT64_MAX / 2, 1}});
    for (bool log : {false, true}) {
        o.log = log;
        const HeatmapGrid g = bin_points(huge, o);
        EXPECT_LE(g.columns, 200);
        EXPECT_EQ(g.points, 3u);
        EXPECT_FALSE(render_heatmap(g, o).empty());
    }
}

TEST(HeatmapBin, OptionsThatCannotBeMetThrow) {
    const auto p = pts({{0, 1}, {1'000'000, 2}});
    auto fails = [&](HeatmapOptions o) {
        try {
            bin_points(p, o);
        } catch (const perfprof::Error&) {
            return true;
        }
        return false;
    };
    HeatmapOptions o;
    EXPECT_FALSE(fails(o));
    o.rows = 0;
    EXPECT_TRUE(fails(o));
    o = {};
    o.rows = kMaxHeatmapRows + 1;
    EXPECT_TRUE(fails(o));
    o = {};
    o.step = 1;  // a million columns
    EXPECT_TRUE(fails(o));
    o = {};
    o.min_latency = 10;
    o.max_latency = 10;
    EXPECT_TRUE(fails(o));
    o.log = false;
    EXPECT_TRUE(fails(o));
    o = {};
    o.log = true;
    o.min_latency = 0;
    EXPECT_TRUE(fails(o));
    o = {};
    o.width = 10;
    EXPECT_TRUE(fails(o));
    EXPECT_THROW(bin_points({}, HeatmapOptions{}), perfprof::Error);
}

// ---- the picture

TEST(HeatmapRender, ExactlyTheNonEmptyCellsAreDrawn) {
    const HeatmapOptions o = fixed(3, 1000, 0, 3000);
    std::vector<LatPoint> p;
    // Column 0 row 0 ×1, column 1 row 2 ×5, column 2 row 1 ×17, column 2 row 0 ×100.
    const std::vector<std::tuple<int, int, int>> cells = {{0, 0, 1}, {1, 2, 5}, {2, 1, 17}, {2, 0, 100}};
    for (auto [c, r, n] : cells)
        for (int i = 0; i < n; i++) p.push_back({uint64_t(c * 1000 + i % 1000), uint64_t(r * 1000 + 500)});
    const std::string svg = render_heatmap(p, o);
    std::map<std::pair<int, int>, uint64_t> want;
    for (auto [c, r, n] : cells) want[{c, r}] = uint64_t(n);
    EXPECT_EQ(drawn_cells(svg), want);
    EXPECT_NE(svg.find("<title>time [1 us, 2 us) latency [2 us, 3 us] count 5</title>"), std::string::npos);
    EXPECT_NE(svg.find("data-edges=\"0 1000 2000 3000\""), std::string::npos);
    EXPECT_NE(svg.find("123 points; columns: 3 of 1 us"), std::string::npos);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    // Nothing outside the document: the only URL is the SVG namespace.
    EXPECT_EQ(svg.find("http"), svg.find("http://www.w3.org/2000/svg"));
    EXPECT_EQ(svg.find("http", svg.find("http") + 1), std::string::npos);
}

TEST(HeatmapRender, TextIsEscapedAndUnknownUnitsShownAsGiven) {
    HeatmapOptions o;
    o.title = "a <b> & \"c\"";
    o.time_unit = "cycles";
    o.latency_unit = "pkts";
    const std::string svg = render_heatmap(pts({{0, 5}, {100, 7}}), o);
    EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
    EXPECT_NE(svg.find(" pkts"), std::string::npos);
    EXPECT_NE(svg.find(" cycles"), std::string::npos);
}

TEST(HeatmapRender, ManyPointsStayASmallPicture) {
    std::vector<LatPoint> p;
    uint64_t x = 12345;
    for (int i = 0; i < 1'000'000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        p.push_back({uint64_t(i) * 1000, (x >> 40) % 10'000'000});
    }
    HeatmapOptions o;
    const std::string svg = render_heatmap(p, o);
    EXPECT_LE(drawn_cells(svg).size(), 200u * 50u);
    EXPECT_LT(svg.size(), 4u << 20);
}

TEST(HeatmapUnits, Quantities) {
    EXPECT_EQ(format_quantity(0, "ns"), "0 ns");
    EXPECT_EQ(format_quantity(1500, "ns"), "1.5 us");
    EXPECT_EQ(format_quantity(1'500'000, "ns"), "1.5 ms");
    EXPECT_EQ(format_quantity(2'000'000'000, "ns"), "2 s");
    EXPECT_EQ(format_quantity(1500, "us"), "1.5 ms");
    EXPECT_EQ(format_quantity(0, "s"), "0 s");
    EXPECT_EQ(format_quantity(12, "cycles"), "12 cycles");
    EXPECT_EQ(unit_ns("ms"), 1'000'000u);
    EXPECT_EQ(unit_ns("cycles"), 0u);
}
