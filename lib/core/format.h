// Allocation-free number formatting for the per-event output paths (snprintf costs more than
// the rest of a trace line together).
#pragma once

#include <cstdint>
#include <string>

namespace perfprof::core {

// Appends v in decimal, right-aligned in `width` characters padded with `pad`.
inline void append_uint(std::string& out, uint64_t v, int width = 0, char pad = ' ') {
    char buf[24];
    int n = 0;
    do {
        buf[n++] = char('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = n; i < width; i++) out += pad;
    while (n) out += buf[--n];
}

}  // namespace perfprof::core
