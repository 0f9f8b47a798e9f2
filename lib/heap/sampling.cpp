#include "heap/sampling.h"

#include <algorithm>
#include <cmath>

#include "heap/agent/wire.h"

namespace perfprof::heap {

static_assert(kSampleQuantiles == PPH_GAPS, "the agent's channel holds as many gaps");

std::vector<uint64_t> sample_gap_quantiles(uint64_t rate, size_t n) {
    std::vector<uint64_t> gaps(n);
    for (size_t i = 0; i < n; i++) {
        const double q = -std::log((double(i) + 0.5) / double(n)) * double(rate);
        gaps[i] = std::max<uint64_t>(1, uint64_t(std::llround(q)));
    }
    return gaps;
}

}  // namespace perfprof::heap
