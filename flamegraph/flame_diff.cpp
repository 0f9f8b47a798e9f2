#include "flamegraph/flame_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "flamegraph/svg.h"

namespace perfprof::flamegraph {

DiffScale diff_scale(const FoldedStacks& stacks, bool normalize) {
    DiffScale s;
    if (normalize && stacks.before_total() > 0) {
        s.factor = double(stacks.total()) / double(stacks.before_total());
        s.normalized = true;
    }
    return s;
}

double diff_change(double before, double after) {
    const double most = std::max(before, after);
    return most > 0 ? (after - before) / most : 0;
}

void append_diff_fill(std::string& out, double change) {
    // From light grey to red (grew) or blue (shrank), linear in the change: a frame that
    // doubled sits half way, a new one is full red.
    constexpr int kGrey = 232;
    constexpr int kRed[3] = {215, 30, 30}, kBlue[3] = {30, 80, 215};
    const double s = std::min(1.0, std::fabs(change));
    const int* to = change > 0 ? kRed : kBlue;
    int c[3];
    for (int i = 0; i < 3; i++) c[i] = int(std::lround(kGrey + (to[i] - kGrey) * s));
    char buf[16];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
    out += buf;
}

void append_diff_percent(std::string& out, double before, double after) {
    if (before <= 0) {
        out += after > 0 ? "new" : "0.0%";
        return;
    }
    const double pct = 100.0 * (after - before) / before;
    if (std::fabs(pct) < 0.05) {
        out += "0.0%";
        return;
    }
    out += pct > 0 ? '+' : '-';
    append_fixed(out, std::fabs(pct), 1, true);
    out += '%';
}

void append_scaled(std::string& out, double v) {
    // Tenths, the integer part grouped like every other count: "1,506.3", "150".
    const auto tenths = uint64_t(std::llround(std::max(0.0, v) * 10));
    append_grouped(out, tenths / 10);
    if (tenths % 10) {
        out += '.';
        out += char('0' + tenths % 10);
    }
}

void append_diff_title(std::string& out, uint64_t after, uint64_t after_total, uint64_t before_raw,
                       const DiffScale& scale, const std::string& count_name) {
    const double before = double(before_raw) * scale.factor;
    out += " (";
    append_grouped(out, after);
    out += ' ';
    append_escaped(out, count_name);
    out += ", ";
    append_fixed(out, after_total ? 100.0 * double(after) / double(after_total) : 0, 2);
    out += "%; before ";
    append_scaled(out, before);
    if (scale.normalized && before_raw) {
        out += " normalized from ";
        append_grouped(out, before_raw);
    }
    out += ": ";
    append_diff_percent(out, before, double(after));
    out += ')';
}

}  // namespace perfprof::flamegraph
