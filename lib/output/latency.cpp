#include "output/latency.h"

#include <algorithm>
#include <cmath>

namespace perfprof::output {

unsigned QuantileSketch::index(uint64_t v) {
    constexpr uint64_t kLinear = uint64_t(1) << kSubBits;
    if (v < kLinear) return unsigned(v);
    const unsigned e = 63u - unsigned(__builtin_clzll(v));  // >= kSubBits
    const unsigned sub = unsigned(v >> (e - kSubBits)) & unsigned(kLinear - 1);
    return (e - kSubBits + 1) * unsigned(kLinear) + sub;
}

uint64_t QuantileSketch::lower(unsigned idx) {
    constexpr unsigned kLinear = 1u << kSubBits;
    if (idx < kLinear) return idx;
    const unsigned e = idx / kLinear + kSubBits - 1, sub = idx % kLinear;
    return (uint64_t(kLinear) + sub) << (e - kSubBits);
}

uint64_t QuantileSketch::upper(unsigned idx) {
    constexpr unsigned kLinear = 1u << kSubBits;
    if (idx < kLinear) return idx;
    const unsigned e = idx / kLinear + kSubBits - 1;
    return lower(idx) + (uint64_t(1) << (e - kSubBits)) - 1;
}

void QuantileSketch::to_buckets() {
    min_ = *std::min_element(exact_.begin(), exact_.end());
    max_ = *std::max_element(exact_.begin(), exact_.end());
    buckets_.reserve(index(max_) + 1);
    for (uint64_t v : exact_) bump(v);
    std::vector<uint64_t>().swap(exact_);
}

void QuantileSketch::clear() {
    n_ = 0;
    exact_.clear();
    buckets_.clear();
    min_ = max_ = 0;
}

// The value at fractional rank `rank` (0 .. n-1) of the bucketed values: each bucket's values
// are taken as spread evenly over its width, clamped to the extremes seen.
double QuantileSketch::bucket_value(double rank) const {
    uint64_t below = 0;
    for (unsigned i = 0; i < buckets_.size(); i++) {
        const uint64_t c = buckets_[i];
        if (!c) continue;
        if (rank < double(below + c)) {
            const double lo = double(lower(i)), width = double(upper(i) - lower(i) + 1);
            const double v = lo + width * (rank - double(below) + 0.5) / double(c);
            return std::clamp(v, double(min_), double(max_));
        }
        below += c;
    }
    return double(max_);
}

double QuantileSketch::quantile(double q) const {
    if (n_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    const double rank = q * double(n_ - 1);
    if (!buckets_.empty()) {
        // The extremes are kept exactly beside the buckets.
        if (q == 0) return double(min_);
        if (q == 1) return double(max_);
        return bucket_value(rank);
    }
    std::sort(exact_.begin(), exact_.end());
    const size_t lo = size_t(std::floor(rank));
    const size_t hi = std::min(lo + 1, exact_.size() - 1);
    const double frac = rank - double(lo);
    return double(exact_[lo]) + (double(exact_[hi]) - double(exact_[lo])) * frac;
}

}  // namespace perfprof::output
