// Formatting into a std::string: allocation-free numbers for the per-event output paths
// (snprintf costs more than the rest of a trace line together), and the aligned cells of the
// statistics tables.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace perfprof::core {

// Appends v in decimal, right-aligned in `width` characters padded with `pad`.
inline void append_uint(std::string& out, uint64_t v, int width = 0, char pad = ' ') {
    // Written backwards into a buffer and appended at once: a push_back per digit cost more
    // than the rest of a sched_switch line.
    char buf[20];
    char* const end = buf + sizeof(buf);
    char* p = end;
    do {
        *--p = char('0' + v % 10);
        v /= 10;
    } while (v);
    const auto n = size_t(end - p);
    if (width > 0 && n < size_t(width)) out.append(size_t(width) - n, pad);
    out.append(p, n);
}

// Appends v in decimal, with a '-' when negative.
inline void append_int(std::string& out, int64_t v) {
    if (v < 0) {
        out += '-';
        append_uint(out, uint64_t(0) - uint64_t(v));
    } else {
        append_uint(out, uint64_t(v));
    }
}

// Appends `text` right-aligned (append_right) or left-aligned (append_left) in `width`
// characters; a longer text is not cut.
inline void append_right(std::string& out, std::string_view text, size_t width) {
    if (text.size() < width) out.append(width - text.size(), ' ');
    out += text;
}
inline void append_left(std::string& out, std::string_view text, size_t width) {
    out += text;
    if (text.size() < width) out.append(width - text.size(), ' ');
}

// Appends v with 3 decimals, right-aligned in `width` characters (printf's "%*.3f").
inline void append_fixed3(std::string& out, double v, int width) {
    char buf[64];
    const int n = std::snprintf(buf, sizeof(buf), "%*.3f", width, v);
    if (n > 0) out.append(buf, size_t(n) < sizeof(buf) ? size_t(n) : sizeof(buf) - 1);
}

}  // namespace perfprof::core
