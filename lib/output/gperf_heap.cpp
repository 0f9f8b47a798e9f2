#include "output/gperf_heap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace perfprof::output {

namespace {

// "%6llu: %8llu [%6llu: %8llu]": the readers' regexes want at least one space after each
// colon (google-pprof's `:\s+(\d+)`), which the widths give whatever the numbers.
void append_counts(std::string& out, uint64_t n1, uint64_t b1, uint64_t n2, uint64_t b2) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%6llu: %8llu [%6llu: %8llu] @", (unsigned long long)n1,
                  (unsigned long long)b1, (unsigned long long)n2, (unsigned long long)b2);
    out += buf;
}

void append_addrs(std::string& out, const std::vector<uint64_t>& addrs) {
    char buf[24];
    for (uint64_t a : addrs) {
        std::snprintf(buf, sizeof buf, " 0x%llx", (unsigned long long)a);
        out += buf;
    }
    out += '\n';
}

void append_maps(std::string& out, std::string_view maps) {
    out += "\nMAPPED_LIBRARIES:\n";
    out += maps;
}

}  // namespace

std::string heap_profile_text(std::vector<HeapRecord> records, uint64_t rate, std::string_view maps) {
    // Stable: records of equal in-use bytes keep the caller's order.
    std::stable_sort(records.begin(), records.end(),
                     [](const HeapRecord& a, const HeapRecord& b) { return a.inuse_bytes > b.inuse_bytes; });
    HeapRecord total;
    for (const HeapRecord& r : records) {
        total.inuse_objects += r.inuse_objects;
        total.inuse_bytes += r.inuse_bytes;
        total.alloc_objects += r.alloc_objects;
        total.alloc_bytes += r.alloc_bytes;
    }
    std::string out = "heap profile: ";
    append_counts(out, total.inuse_objects, total.inuse_bytes, total.alloc_objects, total.alloc_bytes);
    out += rate ? " heap_v2/" + std::to_string(rate) + "\n" : std::string(" heapprofile\n");
    for (const HeapRecord& r : records) {
        append_counts(out, r.inuse_objects, r.inuse_bytes, r.alloc_objects, r.alloc_bytes);
        append_addrs(out, r.addrs);
    }
    append_maps(out, maps);
    return out;
}

std::string growth_profile_text(std::vector<GrowthRecord> records, std::string_view maps) {
    std::stable_sort(records.begin(), records.end(),
                     [](const GrowthRecord& a, const GrowthRecord& b) { return a.bytes > b.bytes; });
    uint64_t calls = 0, bytes = 0;
    for (const GrowthRecord& r : records) {
        calls += r.calls;
        bytes += r.bytes;
    }
    std::string out = "heap profile: ";
    append_counts(out, calls, bytes, calls, bytes);
    out += " growthz\n";
    for (const GrowthRecord& r : records) {
        append_counts(out, r.calls, r.bytes, r.calls, r.bytes);
        append_addrs(out, r.addrs);
    }
    append_maps(out, maps);
    return out;
}

double heap_sample_scale(uint64_t objects, uint64_t bytes, uint64_t rate) {
    if (rate <= 1 || !objects || !bytes) return 1;  // rate 1: every byte sampled
    const double avg = double(bytes) / double(objects);
    return 1 / (1 - std::exp(-avg / double(rate)));
}

}  // namespace perfprof::output
