#include "output/histogram.h"

#include <algorithm>
#include <cstdio>

namespace perfprof::output {

namespace {

// `|` + count/max of `width` stars, padded with spaces, + `|`; a `+` marks a count beyond max.
void append_bar(std::string& out, uint64_t count, uint64_t max, int width) {
    const uint64_t shown = std::min(count, max);
    const auto stars = max ? int(shown * uint64_t(width) / max) : 0;
    out += '|';
    out.append(size_t(stars), '*');
    out.append(size_t(width - stars), ' ');
    out += '|';
    if (count > max) out += '+';
    out += '\n';
}

void append_padded(std::string& out, const std::string& s, size_t width, bool right) {
    if (right && s.size() < width) out.append(width - s.size(), ' ');
    out += s;
    if (!right && s.size() < width) out.append(width - s.size(), ' ');
}

}  // namespace

std::string format_log2(std::span<const uint64_t> buckets, std::string_view label) {
    int first = -1, last = -1;
    uint64_t max = 0;
    for (size_t i = 0; i < buckets.size(); i++) {
        if (!buckets[i]) continue;
        if (first < 0) first = int(i);
        last = int(i);
        max = std::max(max, buckets[i]);
    }
    if (last < 0) return {};
    const bool wide = last > 32;
    const size_t num = wide ? 20 : 10, bar = wide ? 20 : 40;
    std::string out(wide ? 15 : 5, ' ');
    append_padded(out, std::string(label), wide ? 29 : 19, false);
    out += " : count    distribution\n";
    for (int i = first; i <= last; i++) {
        // Leading empty buckets are folded into the first row, which starts at 0.
        const uint64_t low = i == first || i == 0 ? 0 : uint64_t(1) << i;
        const uint64_t high = i == 63 ? UINT64_MAX : (uint64_t(1) << (i + 1)) - 1;
        append_padded(out, std::to_string(low), num, true);
        out += " -> ";
        append_padded(out, std::to_string(high), num, false);
        out += " : ";
        append_padded(out, std::to_string(buckets[size_t(i)]), 8, false);
        out += ' ';
        append_bar(out, buckets[size_t(i)], max, int(bar));
    }
    return out;
}

std::string format_linear(std::span<const uint64_t> buckets, uint64_t base, uint64_t step,
                          std::string_view label) {
    size_t first = buckets.size(), last = 0;
    uint64_t max = 0;
    for (size_t i = 0; i < buckets.size(); i++) {
        if (!buckets[i]) continue;
        first = std::min(first, i);
        last = i;
        max = std::max(max, buckets[i]);
    }
    if (first == buckets.size()) return {};
    std::string out(5, ' ');
    append_padded(out, std::string(label), 13, false);
    out += " : count     distribution\n";
    for (size_t i = first; i <= last; i++) {
        out.append(8, ' ');
        append_padded(out, std::to_string(base + i * step), 10, false);
        out += " : ";
        append_padded(out, std::to_string(buckets[i]), 8, false);
        out += ' ';
        append_bar(out, buckets[i], max, 40);
    }
    return out;
}

}  // namespace perfprof::output
