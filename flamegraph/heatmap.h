// Latency heat maps (ANCHORS §7.6): the `{time} {latency}` points of SPEC §8.1's .lat files
// (read by flamegraph/lat_file.h), binned into time columns × latency rows and drawn as a self-contained SVG
// whose cells carry their counts (colour, a <title> for hover, data-* attributes for scripts and tests).
// `perf-prof heatmap` draws a file; multi-trace can bin its pairs without writing one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flamegraph/lat_file.h"

namespace perfprof::flamegraph {

struct HeatmapOptions {
    std::string title = "Latency Heat Map";
    std::string subtitle;  // e.g. the file name; "" = none
    int width = 1200;      // the whole picture, px
    int height = 500;      // the plot area, px
    int rows = 50;         // latency buckets
    // Time per column in the time unit; 0 = the smallest 1/2/5×10^k step giving at most
    // max_columns columns over the points' time span.
    uint64_t step = 0;
    int max_columns = 200;
    // Latency range; unset = from the data: linear from 0 to `rows` × the round row height
    // that just holds the largest latency, log from/to the 1/2/5×10^k values around the
    // smallest positive and the largest latency. Latencies outside [min, max] are counted in the bottom or
    // top row and reported in the header line.
    std::optional<uint64_t> min_latency, max_latency;
    // Rows equally spaced in log(latency), latency 0 in the bottom row: latencies have long
    // tails (microseconds to seconds), which a linear scale squeezes into its bottom row.
    bool log = true;
    // Unit names: ns, us, ms and s are scaled for labels ("1.5 ms"); any other name is printed
    // as given after the raw number.
    std::string time_unit = "ns", latency_unit = "ns";
};

// Limits on the options: the picture stays small whatever the input (at most kMaxHeatmapColumns ×
// kMaxHeatmapRows cells, only non-empty ones drawn).
inline constexpr int kMaxHeatmapRows = 500;
inline constexpr int kMaxHeatmapColumns = 2000;

// The counts per cell, before drawing.
struct HeatmapGrid {
    uint64_t t0 = 0;    // the smallest time: column c covers [t0 + c·step, t0 + (c+1)·step)
    uint64_t step = 1;  // time per column
    int columns = 0, rows = 0;
    bool log = false;
    // rows + 1 latency edges: row r (0 = lowest) holds [edges[r], edges[r+1]); the top row
    // also holds edges[rows]. Equal edges make an empty row (log rows narrower than one unit).
    std::vector<uint64_t> edges;
    std::vector<uint64_t> counts;  // columns × rows, at c·rows + r
    uint64_t points = 0;
    uint64_t below = 0, above = 0;  // latencies outside [edges.front(), edges.back()], clamped in
    uint64_t max_count = 0;

    uint64_t count(int column, int row) const { return counts[size_t(column) * size_t(rows) + size_t(row)]; }
    int row_of(uint64_t latency) const;  // the row a latency lands in, clamped
};

// Throws Error (usage) for options outside their ranges (rows, max_columns, width, height),
// so that a command can refuse them before reading its input.
void check_heatmap_options(const HeatmapOptions& opt);

// Throws Error (usage) for options that cannot be met (as check_heatmap_options, a minimum
// latency not below the maximum, log from 0, a step giving more than kMaxHeatmapColumns
// columns), Error (runtime) for no points.
HeatmapGrid bin_points(std::span<const LatPoint> points, const HeatmapOptions& opt);

// The complete SVG document: no external references, an embedded script for hover details.
std::string render_heatmap(const HeatmapGrid& grid, const HeatmapOptions& opt);
std::string render_heatmap(std::span<const LatPoint> points, const HeatmapOptions& opt);

// "1.5 ms", "250 us", "3 s" for values in a known unit (ns, us, ms, s); "123 cycles" otherwise.
std::string format_quantity(uint64_t value, std::string_view unit);

// Multiplier from `unit` to ns: 1, 1000, 10^6, 10^9; 0 for a unit that is not a time unit.
uint64_t unit_ns(std::string_view unit);

}  // namespace perfprof::flamegraph
