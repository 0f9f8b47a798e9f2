// gperftools' CPU profile: the binary file CPUPROFILE writes and a server's /pprof/profile
// answers, which google-pprof reads. Machine words (64-bit, this machine's byte order): the
// header {0, 3, 0, sampling period in µs, 0}; per distinct stack {count, depth, pc...}, the
// sampled pc first and return addresses after it (pprof looks up each of those at pc-1); the
// trailer {0, 1, 0}; then the process's /proc/PID/maps text, which pprof uses to place the pcs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::output {

class GperfCpuProfile {
public:
    explicit GperfCpuProfile(uint64_t period_us);
    // One stack of `pcs` (innermost first) seen `count` times; no pcs: ignored.
    void add(std::span<const uint64_t> pcs, uint64_t count);
    // The file: header, stacks, trailer, then `maps`.
    std::string encode(std::string_view maps) const;

private:
    std::vector<uint64_t> words_;
};

}  // namespace perfprof::output
