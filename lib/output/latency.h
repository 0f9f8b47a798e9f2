// Latency statistics (SPEC §4.4.5, §9.8): calls, total, min, max, a count above a threshold,
// and quantiles from a sketch that is exact for small counts.
//
// QuantileSketch keeps the first kExact values as they are; past that, log-linear buckets:
// values below 2^kSubBits exactly, above it 2^kSubBits buckets per power of two, so a bucket is
// at most 1/128 of its values wide and a quantile is off by less than 0.4 % of its value
// (SPEC §10 #23 allows any estimator as accurate as upstream's t-digest). Adding is O(1) and
// allocation-free once the buckets span the values seen; memory stays under 30 KB a sketch
// for any range of uint64 values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perfprof::output {

class QuantileSketch {
public:
    static constexpr unsigned kExact = 256;
    static constexpr unsigned kSubBits = 7;

    void add(uint64_t v) {
        ++n_;
        if (buckets_.empty()) {
            exact_.push_back(v);
            if (exact_.size() > kExact) to_buckets();
            return;
        }
        if (v < min_) min_ = v;
        if (v > max_) max_ = v;
        bump(v);
    }
    uint64_t count() const { return n_; }
    // The q-quantile (0 <= q <= 1) by linear interpolation between the closest ranks (exact
    // while at most kExact values were added); 0 when empty.
    double quantile(double q) const;
    void clear();
    // Heap bytes held.
    size_t memory() const {
        return exact_.capacity() * sizeof(uint64_t) + buckets_.capacity() * sizeof(uint32_t);
    }

    // Bucket arithmetic, public for the tests: index of a value, and the bucket's bounds.
    static unsigned index(uint64_t v);
    static uint64_t lower(unsigned idx);
    static uint64_t upper(unsigned idx);  // inclusive

private:
    void to_buckets();
    void bump(uint64_t v) {
        const unsigned i = index(v);
        if (i >= buckets_.size()) buckets_.resize(i + 1);
        ++buckets_[i];
    }
    double bucket_value(double rank) const;

    uint64_t n_ = 0;
    mutable std::vector<uint64_t> exact_;  // sorted lazily by quantile()
    std::vector<uint32_t> buckets_;
    uint64_t min_ = 0, max_ = 0;  // of the bucketed values, to clamp estimates
};

// One row of a latency table.
struct LatencyDist {
    uint64_t calls = 0;
    uint64_t total = 0;
    uint64_t min = UINT64_MAX;
    uint64_t max = 0;
    uint64_t over = 0;  // intervals above the --than threshold
    QuantileSketch sketch;

    void add(uint64_t v, uint64_t threshold) {
        ++calls;
        total += v;
        if (v < min) min = v;
        if (v > max) max = v;
        if (threshold && v > threshold) ++over;
        sketch.add(v);
    }
    void clear() { *this = LatencyDist(); }
};

}  // namespace perfprof::output
