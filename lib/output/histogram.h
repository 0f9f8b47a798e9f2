// Text histograms (SPEC §8.2): log2 buckets (multi-trace --hist) and linear buckets, drawn
// with 40-column star bars as bcc's tools print them.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace perfprof::output {

// Bucket 0 holds 0 and 1, bucket i >= 1 holds [2^i, 2^(i+1) - 1].
inline int log2_bucket(uint64_t v) {
    return v <= 1 ? 0 : 63 - __builtin_clzll(v);
}

// Values counted into log2 buckets.
class Log2Histogram {
public:
    void add(uint64_t v, uint64_t n = 1) { buckets_[size_t(log2_bucket(v))] += n; }
    std::span<const uint64_t> buckets() const { return buckets_; }
    void clear() { buckets_.fill(0); }

private:
    std::array<uint64_t, 64> buckets_{};
};

// The log2 table of `buckets` (index i as above) under a `label` column ("usecs"); rows from
// the first non-zero bucket (its row starting at 0) to the last. Buckets past 32 switch to the
// wide layout (20-character numbers, 20-star bars). "" when every bucket is zero.
std::string format_log2(std::span<const uint64_t> buckets, std::string_view label);
// The linear table: bucket i is the value base + i x step; rows from the first to the last
// non-zero bucket. "" when every bucket is zero.
std::string format_linear(std::span<const uint64_t> buckets, uint64_t base, uint64_t step,
                          std::string_view label);

}  // namespace perfprof::output
