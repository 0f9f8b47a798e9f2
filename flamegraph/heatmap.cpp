#include "flamegraph/heatmap.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "flamegraph/svg.h"
#include "heatmap_js.h"
#include "perf-prof/error.h"

namespace perfprof::flamegraph {

// ---- units and labels

uint64_t unit_ns(std::string_view unit) {
    if (unit == "ns") return 1;
    if (unit == "us") return 1000;
    if (unit == "ms") return 1000 * 1000;
    if (unit == "s") return 1000 * 1000 * 1000;
    return 0;
}

namespace {

// How a time-unit value is shown: divided by `ns`, followed by `name`.
struct Display {
    uint64_t ns;
    const char* name;
};
constexpr Display kDisplays[] = {{1000000000, "s"}, {1000000, "ms"}, {1000, "us"}, {1, "ns"}};

// The largest display unit in which `value` (in `unit`) is at least 1; 0 is shown in `unit`.
const Display* display_for(uint64_t value, std::string_view unit) {
    const uint64_t f = unit_ns(unit);
    if (f == 0) return nullptr;
    const long double ns = static_cast<long double>(value) * f;
    for (const Display& d : kDisplays)
        if (value == 0 ? d.ns == f : ns >= d.ns) return &d;
    return &kDisplays[3];
}

// Appends `value` (in `unit`) shown in `d`, or, for a unit we cannot scale, as a raw number
// followed by the unit's name (unescaped: callers escape the whole label).
void append_quantity(std::string& out, uint64_t value, std::string_view unit, const Display* d,
                     int decimals = 3) {
    const uint64_t f = unit_ns(unit);
    if (f == 0 || d == nullptr) {
        out += std::to_string(value);
        out += ' ';
        out.append(unit);
        return;
    }
    append_fixed(out, double(static_cast<long double>(value) * f / d->ns), decimals);
    out += ' ';
    out += d->name;
}

// "[lo, hi)" (or "[lo, hi]") in the unit that suits hi, with enough decimals to tell the ends
// apart.
void append_range(std::string& out, uint64_t lo, uint64_t hi, std::string_view unit, bool closed) {
    const Display* d = display_for(hi, unit);
    int decimals = 3;
    if (d) {
        const long double width = static_cast<long double>(hi - lo) * unit_ns(unit) / d->ns;
        while (decimals < 9 && width * std::pow(10.0L, decimals) < 10) decimals++;
    }
    out += '[';
    append_quantity(out, lo, unit, d, decimals);
    out += ", ";
    append_quantity(out, hi, unit, d, decimals);
    out += closed ? ']' : ')';
}

}  // namespace

std::string format_quantity(uint64_t value, std::string_view unit) {
    std::string out;
    append_quantity(out, value, unit, display_for(value, unit));
    return out;
}

// ---- binning

namespace {

// 1, 2, 5 × 10^k: round steps for time columns and log-scale latency bounds.
constexpr std::array<int, 3> kCoarse = {10, 20, 50};
// Finer round widths for linear rows, so the data fills at least 80% of the picture's height.
constexpr std::array<int, 10> kFine = {10, 12, 15, 20, 25, 30, 40, 50, 60, 80};

// The smallest round value (m/10 × 10^k, an integer) >= x; x itself past the largest.
template <size_t N>
uint64_t round_up(uint64_t x, const std::array<int, N>& tenths) {
    for (uint64_t p = 1; p <= UINT64_MAX / 100; p *= 10)
        for (int m : tenths)
            if ((m * p) % 10 == 0 && m * p / 10 >= x) return m * p / 10;
    return x;
}

// The largest round value <= x, at least 1.
template <size_t N>
uint64_t round_down(uint64_t x, const std::array<int, N>& tenths) {
    uint64_t best = 1;
    for (uint64_t p = 1; p <= UINT64_MAX / 100; p *= 10)
        for (int m : tenths)
            if ((m * p) % 10 == 0) {
                if (m * p / 10 > x) return best;
                best = m * p / 10;
            }
    return best;
}

constexpr int kMinWidth = 300, kMinHeight = 50, kMaxPixels = 20000;

// The latency range [lo, hi] the rows cover: the options' bounds, else round ones from the data.
std::pair<uint64_t, uint64_t> latency_range(std::span<const LatPoint> points, const HeatmapOptions& opt) {
    uint64_t lmax = 0, lmin_pos = UINT64_MAX;
    for (const LatPoint& p : points) {
        lmax = std::max(lmax, p.latency);
        if (p.latency) lmin_pos = std::min(lmin_pos, p.latency);
    }
    const uint64_t rows = uint64_t(opt.rows);
    uint64_t lo, hi;
    if (!opt.log) {
        lo = opt.min_latency.value_or(0);
        if (opt.max_latency) {
            hi = *opt.max_latency;
        } else {
            // A round width per row, so that the labels are round too.
            const uint64_t need = lmax > lo ? (lmax - lo) / rows + ((lmax - lo) % rows != 0) : 1;
            const uint64_t w = round_up(need, kFine);
            hi = w > (UINT64_MAX - lo) / rows ? UINT64_MAX : lo + w * rows;
        }
    } else {
        if (opt.min_latency && *opt.min_latency == 0)
            throw Error::usage("a log latency scale needs a minimum latency above 0",
                               "a linear scale can start at 0");
        hi = opt.max_latency ? *opt.max_latency : round_up(std::max<uint64_t>(lmax, 1), kCoarse);
        if (opt.min_latency) {
            lo = *opt.min_latency;
        } else {
            lo = round_down(lmin_pos == UINT64_MAX ? 1 : lmin_pos, kCoarse);
            if (opt.max_latency && lo >= hi) lo = hi > 1 ? round_down(hi - 1, kCoarse) : 1;
        }
        if (!opt.max_latency && hi <= lo) hi = lo == UINT64_MAX ? lo : round_up(lo + 1, kCoarse);
    }
    if (hi <= lo)
        throw Error::usage("the latency range is empty: the maximum, " +
                           format_quantity(hi, opt.latency_unit) + ", is not above the minimum, " +
                           format_quantity(lo, opt.latency_unit));
    return {lo, hi};
}

std::vector<uint64_t> latency_edges(uint64_t lo, uint64_t hi, int rows, bool log) {
    std::vector<uint64_t> edges(size_t(rows) + 1);
    const long double ratio = log ? std::log(static_cast<long double>(hi) / lo) : 0;
    for (int r = 0; r <= rows; r++) {
        uint64_t e;
        if (r == rows) {
            e = hi;
        } else if (!log) {
            e = lo + uint64_t(static_cast<unsigned __int128>(hi - lo) * unsigned(r) / unsigned(rows));
        } else {
            const long double v = std::round(lo * std::exp(ratio * r / rows));
            e = v >= static_cast<long double>(hi) ? hi : uint64_t(v);
        }
        edges[size_t(r)] = r == 0 ? lo : std::max(e, edges[size_t(r) - 1]);
    }
    return edges;
}

}  // namespace

void check_heatmap_options(const HeatmapOptions& opt) {
    if (opt.rows < 1 || opt.rows > kMaxHeatmapRows)
        throw Error::usage("rows must be from 1 to " + std::to_string(kMaxHeatmapRows));
    if (opt.max_columns < 1 || opt.max_columns > kMaxHeatmapColumns)
        throw Error::usage("columns must be from 1 to " + std::to_string(kMaxHeatmapColumns));
    if (opt.width < kMinWidth || opt.width > kMaxPixels)
        throw Error::usage("width must be from " + std::to_string(kMinWidth) + " to " +
                           std::to_string(kMaxPixels) + " px");
    if (opt.height < kMinHeight || opt.height > kMaxPixels)
        throw Error::usage("height must be from " + std::to_string(kMinHeight) + " to " +
                           std::to_string(kMaxPixels) + " px");
}

int HeatmapGrid::row_of(uint64_t latency) const {
    if (latency < edges.front()) return 0;
    if (latency >= edges.back()) return rows - 1;
    return int(std::upper_bound(edges.begin(), edges.end() - 1, latency) - edges.begin()) - 1;
}

HeatmapGrid bin_points(std::span<const LatPoint> points, const HeatmapOptions& opt) {
    check_heatmap_options(opt);
    if (points.empty()) throw Error("no points to draw");
    HeatmapGrid g;
    uint64_t tmax = 0;
    g.t0 = UINT64_MAX;
    for (const LatPoint& p : points) {
        g.t0 = std::min(g.t0, p.time);
        tmax = std::max(tmax, p.time);
    }
    const uint64_t span = tmax - g.t0;
    if (opt.step) {
        g.step = opt.step;
        if (span / g.step >= uint64_t(kMaxHeatmapColumns))
            throw Error::usage("a step of " + format_quantity(g.step, opt.time_unit) + " makes more than " +
                               std::to_string(kMaxHeatmapColumns) + " columns over the " +
                               format_quantity(span, opt.time_unit) + " the points span");
    } else {
        // span / step < max_columns, so at most max_columns columns (2 where one column
        // would need a step past 2^64-1).
        const uint64_t least = span / uint64_t(opt.max_columns);
        g.step = least == UINT64_MAX ? least : round_up(least + 1, kCoarse);
    }
    g.columns = int(span / g.step + 1);
    g.rows = opt.rows;
    g.log = opt.log;
    const auto [lo, hi] = latency_range(points, opt);
    g.edges = latency_edges(lo, hi, g.rows, g.log);
    g.counts.assign(size_t(g.columns) * size_t(g.rows), 0);
    for (const LatPoint& p : points) {
        if (p.latency < lo) g.below++;
        if (p.latency > hi) g.above++;
        uint64_t& n =
            g.counts[size_t((p.time - g.t0) / g.step) * size_t(g.rows) + size_t(g.row_of(p.latency))];
        g.max_count = std::max(g.max_count, ++n);
    }
    g.points = points.size();
    return g;
}

// ---- drawing

namespace {

constexpr int kLeft = 90, kRight = 24, kTop = 78;
constexpr int kSwatches = 10, kSwatchWidth = 30;
constexpr int kLabelGap = 24;  // px between latency labels

constexpr std::string_view kCss =
    "text { font-family: Verdana, Helvetica, sans-serif; font-size: 12px; fill: #000; }\n"
    ".title { font-size: 17px; }\n"
    ".small { font-size: 11px; fill: #333; }\n"
    ".frame { fill: none; stroke: #999; }\n"
    ".tick { stroke: #999; }\n"
    "#cells rect { shape-rendering: crispEdges; }\n"
    "#cells rect:hover, #cells rect.hl { stroke: #000; stroke-width: 1; }";

// Pale yellow to dark red; a count's place between 1 and the largest count, on a log scale,
// picks the colour, so that single outliers stay visible beside cells of thousands.
void append_colour(std::string& out, uint64_t n, uint64_t max) {
    static constexpr std::array<std::array<int, 3>, 5> kStops = {
        {{255, 240, 160}, {254, 200, 90}, {250, 140, 60}, {225, 60, 30}, {140, 0, 20}}};
    const double t = max > 1 ? std::log(double(n)) / std::log(double(max)) : 1.0;
    const double x = std::clamp(t, 0.0, 1.0) * (kStops.size() - 1);
    const size_t i = std::min(size_t(x), kStops.size() - 2);
    const double f = x - double(i);
    static constexpr char kHex[] = "0123456789abcdef";
    out += '#';
    for (size_t k = 0; k < 3; k++) {
        const int v = int(std::lround(kStops[i][k] + (kStops[i + 1][k] - kStops[i][k]) * f));
        out += kHex[v >> 4];
        out += kHex[v & 15];
    }
}

// `<TAG name="v"...` with numeric attributes; the caller adds the rest and closes it.
void open_element(std::string& out, std::string_view tag,
                  std::initializer_list<std::pair<std::string_view, double>> attrs) {
    out += '<';
    out.append(tag);
    for (const auto& [name, v] : attrs) append_attr(out, name, v);
}

void append_text(std::string& out, double x, double y, std::string_view attrs, std::string_view text) {
    open_element(out, "text", {{"x", x}, {"y", y}});
    if (!attrs.empty()) {
        out += ' ';
        out.append(attrs);
    }
    out += '>';
    append_escaped(out, text);
    out += "</text>\n";
}

void append_line(std::string& out, double x1, double y1, double x2, double y2) {
    open_element(out, "line class=\"tick\"", {{"x1", x1}, {"y1", y1}, {"x2", x2}, {"y2", y2}});
    out += "/>\n";
}

void open_rect(std::string& out, double x, double y, double w, double h) {
    open_element(out, "rect", {{"x", x}, {"y", y}, {"width", w}, {"height", h}});
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
    uint64_t v;
    return __builtin_mul_overflow(a, b, &v) ? UINT64_MAX : v;
}

std::string header_line(const HeatmapGrid& g, const HeatmapOptions& opt) {
    const uint64_t lo = g.edges.front(), hi = g.edges.back();
    std::string s =
        std::to_string(g.points) + (g.points == 1 ? " point" : " points") +
        "; columns: " + std::to_string(g.columns) + " of " + format_quantity(g.step, opt.time_unit) +
        " from the first time; rows: " + std::to_string(g.rows) + (g.log ? " log" : " linear") + " from " +
        format_quantity(lo, opt.latency_unit) + " to " + format_quantity(hi, opt.latency_unit);
    if (!g.log && (hi - lo) % uint64_t(g.rows) == 0)
        s += " (" + format_quantity((hi - lo) / uint64_t(g.rows), opt.latency_unit) + " each)";
    if (g.below)
        s += "; " + std::to_string(g.below) + " below " + format_quantity(lo, opt.latency_unit) +
             " counted in the bottom row";
    if (g.above)
        s += "; " + std::to_string(g.above) + " above " + format_quantity(hi, opt.latency_unit) +
             " counted in the top row";
    return s;
}

void append_time_axis(std::string& out, const HeatmapGrid& g, const HeatmapOptions& opt, double plot_w,
                      double bottom) {
    // Ticks at a round time step, at least 100 px apart, all labelled in one unit.
    const long double total = static_cast<long double>(g.columns) * g.step;
    const long double need = std::ceil(total * 100 / plot_w);
    const uint64_t tick = need >= 1e18L ? 0 : round_up(std::max<uint64_t>(1, uint64_t(need)), kCoarse);
    const uint64_t after = tick ? uint64_t(total / tick) : 0;  // ticks after the origin
    auto value = [&](uint64_t k) {
        const long double v = static_cast<long double>(k) * tick;
        return v >= 18446744073709551615.0L ? UINT64_MAX : uint64_t(v);
    };
    const Display* d = display_for(value(after), opt.time_unit);
    for (uint64_t k = 0; k <= after; k++) {
        const double x = kLeft + double(static_cast<long double>(k) * tick / total) * plot_w;
        append_line(out, x, bottom, x, bottom + 5);
        std::string label;
        append_quantity(label, value(k), opt.time_unit, d);
        append_text(out, x, bottom + 18, "text-anchor=\"middle\"", label);
    }
    std::string title = "Time since the first point";
    if (d) title += std::string(" (") + d->name + ")";
    append_text(out, kLeft + plot_w / 2, bottom + 36, "text-anchor=\"middle\"", title);
}

void append_latency_axis(std::string& out, const HeatmapGrid& g, const HeatmapOptions& opt, double plot_h,
                         double bottom) {
    // Labels at round latencies, at least kLabelGap px apart, the bottom one at the range's start.
    const uint64_t lo = g.edges.front(), hi = g.edges.back();
    const long double log_span = g.log ? std::log(static_cast<long double>(hi) / lo) : 0;
    auto y_of = [&](uint64_t v) {
        const long double f = g.log ? std::log(static_cast<long double>(v) / lo) / log_span
                                    : static_cast<long double>(v - lo) / (hi - lo);
        return bottom - double(f) * plot_h;
    };
    double last_y = bottom + kLabelGap;
    auto tick = [&](uint64_t v) {
        const double y = y_of(v);
        if (last_y - y < kLabelGap) return;
        append_line(out, kLeft - 5, y, kLeft, y);
        append_text(out, kLeft - 8, y + 4, "text-anchor=\"end\"", format_quantity(v, opt.latency_unit));
        last_y = y;
    };
    tick(lo);
    if (g.log) {
        // 1, 2, 5 per decade where a decade is tall enough, else the powers of ten.
        const bool fine = plot_h / (log_span / std::log(10.0L)) >= 3 * kLabelGap;
        for (uint64_t p = 1; p <= UINT64_MAX / 100; p *= 10)
            for (int m : kCoarse) {
                const uint64_t v = m * p / 10;
                if ((m * p) % 10 == 0 && v > lo && v <= hi && (fine || m == 10)) tick(v);
            }
    } else {
        const long double need = std::ceil(static_cast<long double>(hi - lo) * kLabelGap / plot_h);
        const uint64_t step =
            need >= 1e18L ? hi - lo : round_up(std::max<uint64_t>(1, uint64_t(need)), kCoarse);
        for (uint64_t v = lo / step * step; hi - v >= step;) {  // v <= hi: no wrap
            v += step;
            tick(v);
        }
    }
    if (last_y > y_of(hi)) tick(hi);
    const double mid = bottom - plot_h / 2;
    std::string attrs = "text-anchor=\"middle\" transform=\"rotate(-90 16 ";
    append_fixed(attrs, mid);
    attrs += ")\"";
    append_text(out, 16, mid, attrs, g.log ? "Latency (log scale)" : "Latency");
}

void append_legend(std::string& out, const HeatmapGrid& g, double y) {
    out += "<g id=\"legend\">\n";
    const int n = g.max_count > 1 ? kSwatches : 1;
    for (int i = 0; i < n; i++) {
        // The count at this swatch's place on the log scale from 1 to the largest count.
        const double t = n > 1 ? double(i) / (n - 1) : 1.0;
        const uint64_t c = i == n - 1 ? g.max_count : uint64_t(std::lround(std::pow(double(g.max_count), t)));
        open_rect(out, kLeft + i * kSwatchWidth, y, kSwatchWidth, 12);
        out += " fill=\"";
        append_colour(out, c, g.max_count);
        out += "\"/>\n";
        if (i == 0 || i == n - 1 || i == n / 2)
            append_text(out, kLeft + i * kSwatchWidth + kSwatchWidth / 2.0, y + 26, "text-anchor=\"middle\"",
                        std::to_string(c));
    }
    append_text(out, kLeft + n * kSwatchWidth + 12, y + 11, "",
                "points per cell (colour on a log scale); empty cells are blank");
    out += "</g>\n";
}

}  // namespace

std::string render_heatmap(const HeatmapGrid& g, const HeatmapOptions& opt) {
    check_heatmap_options(opt);
    const double plot_w = opt.width - kLeft - kRight;
    const double plot_h = opt.height;
    const double cw = plot_w / g.columns, ch = plot_h / g.rows;
    const double bottom = kTop + plot_h;
    const int height = int(bottom) + 120;

    std::string out;
    out.reserve(4096 + g.counts.size() / 4 * 200);
    begin_document(out, opt.width, height, kCss);
    out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    append_text(out, opt.width / 2.0, 24, "class=\"title\" text-anchor=\"middle\"", opt.title);
    if (!opt.subtitle.empty())
        append_text(out, opt.width / 2.0, 44, "class=\"small\" text-anchor=\"middle\"", opt.subtitle);
    append_text(out, opt.width / 2.0, 62, "id=\"params\" class=\"small\" text-anchor=\"middle\"",
                header_line(g, opt));

    // Each cell's ranges, built once per column and row.
    std::vector<std::string> col_text(size_t(g.columns)), row_text(size_t(g.rows));
    for (int c = 0; c < g.columns; c++) {
        const uint64_t a = saturating_mul(uint64_t(c), g.step), b = saturating_mul(uint64_t(c) + 1, g.step);
        std::string text = "time ";
        append_range(text, a, b, opt.time_unit, false);
        append_escaped(col_text[size_t(c)], text);
    }
    for (int r = 0; r < g.rows; r++) {
        std::string text = "latency ";
        append_range(text, g.edges[size_t(r)], g.edges[size_t(r) + 1], opt.latency_unit, r == g.rows - 1);
        append_escaped(row_text[size_t(r)], text);
    }

    out += "<g id=\"cells\" data-t0=\"" + std::to_string(g.t0) + "\" data-step=\"" + std::to_string(g.step) +
           "\" data-columns=\"" + std::to_string(g.columns) + "\" data-rows=\"" + std::to_string(g.rows) +
           "\" data-scale=\"" + (g.log ? "log" : "linear") + "\" data-edges=\"";
    for (size_t r = 0; r < g.edges.size(); r++) out += (r ? " " : "") + std::to_string(g.edges[r]);
    out += "\">\n";
    for (int c = 0; c < g.columns; c++) {
        for (int r = 0; r < g.rows; r++) {
            const uint64_t n = g.count(c, r);
            if (n == 0) continue;
            open_rect(out, kLeft + c * cw, kTop + (g.rows - 1 - r) * ch, cw, ch);
            out += " fill=\"";
            append_colour(out, n, g.max_count);
            out += "\" data-t=\"";
            append_int(out, c);
            out += "\" data-l=\"";
            append_int(out, r);
            out += "\" data-n=\"";
            out += std::to_string(n);
            out += "\"><title>";
            out += col_text[size_t(c)];
            out += ' ';
            out += row_text[size_t(r)];
            out += " count ";
            out += std::to_string(n);
            out += "</title></rect>\n";
        }
    }
    out += "</g>\n";

    open_rect(out, kLeft, kTop, plot_w, plot_h);
    out += " class=\"frame\"/>\n";
    append_time_axis(out, g, opt, plot_w, bottom);
    append_latency_axis(out, g, opt, plot_h, bottom);
    append_legend(out, g, bottom + 52);
    append_text(out, kLeft, bottom + 108, "id=\"details\"",
                "Point at a cell for its time, latency and count.");
    append_script(out, k_heatmap_js);
    end_document(out);
    return out;
}

std::string render_heatmap(std::span<const LatPoint> points, const HeatmapOptions& opt) {
    return render_heatmap(bin_points(points, opt), opt);
}

}  // namespace perfprof::flamegraph
