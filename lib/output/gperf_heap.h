// gperftools' heap profile text (what /pprof/heap and /pprof/growth serve, and what pprof reads
// as a "legacy" heap profile):
//   heap profile: <in-use objects>: <bytes> [<alloc objects>: <bytes>] @ heap_v2/<rate>
//   <in-use objects>: <bytes> [<alloc objects>: <bytes>] @ 0x<addr> 0x<addr> ...   per stack
//   <blank line>
//   MAPPED_LIBRARIES:
//   <the process's /proc/PID/maps>
// The counts are the sampled ones: heap_v2/RATE tells the reader (google-pprof, Go's pprof) to
// unsample them, each pair by its own average size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::output {

struct HeapRecord {
    uint64_t inuse_objects = 0, inuse_bytes = 0;
    uint64_t alloc_objects = 0, alloc_bytes = 0;
    std::vector<uint64_t> addrs;  // return addresses, innermost first
};

// The heap profile of `records` (sorted here: in-use bytes descending) sampled at `rate` mean
// bytes; rate 0 (every allocation kept) says `heapprofile`, which readers do not unsample.
std::string heap_profile_text(std::vector<HeapRecord> records, uint64_t rate, std::string_view maps);

struct GrowthRecord {
    uint64_t calls = 0, bytes = 0;  // the calls that grew the heap, and by how much
    std::vector<uint64_t> addrs;
};

// The heap growth profile (`@ growthz`, never sampled): both pairs carry (calls: bytes).
std::string growth_profile_text(std::vector<GrowthRecord> records, std::string_view maps);

// What one kept allocation of a pair stands for, sampled at `rate` mean bytes: the inverse of
// the probability 1 - exp(-size/rate) that an allocation of the pair's average size was kept.
// 1 when nothing was sampled (rate 0 or 1, as Go reads it) or there is nothing to scale (no
// objects, no bytes).
double heap_sample_scale(uint64_t objects, uint64_t bytes, uint64_t rate);

}  // namespace perfprof::output
