// What the fuzz targets share: reading fields off the fuzzer's bytes, and failing loudly.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fuzz {

// The next `bytes` (at most 8) of the input as a little-endian number, zero-padded when the
// input runs out; advances past them.
inline uint64_t take(const uint8_t*& p, size_t& n, size_t bytes) {
    uint64_t v = 0;
    const size_t k = bytes < n ? bytes : n;
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
}

// A property the target checks does not hold: says which, and aborts (the fuzzer's finding).
[[noreturn]] inline void broken(const char* target, const char* what) {
    std::fprintf(stderr, "%s: %s\n", target, what);
    std::abort();
}

}  // namespace fuzz
