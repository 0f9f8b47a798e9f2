// The sampling gaps of the heap profiles' Poisson sampling by bytes, shared by the eBPF program
// (bpf/heap.bpf.c) and the heap agent (lib/heap/agent/sampler.h), which both draw them uniformly
// and have no floating point of their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perfprof::heap {

// kSampleQuantiles quantiles of the exponential distribution of mean `rate`,
// gaps[i] = -ln((i + 0.5) / n) * rate, rounded, at least 1. bpf/heap.bpf.c has the same count
// (SAMPLE_QUANTILES), the agent's channel too (PPH_GAPS). Pure: exposed for tests.
inline constexpr size_t kSampleQuantiles = 4096;
std::vector<uint64_t> sample_gap_quantiles(uint64_t rate, size_t n = kSampleQuantiles);

}  // namespace perfprof::heap
