// The allocations still outstanding, by pointer (SPEC §4.5.2), and their grouping by call chain
// for the leaked-bytes report (§4.5.3 step 6). Pure bookkeeping: kmemleak decides which sample
// allocates or frees which pointer and when to report.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "heap/leak_report.h"
#include "perf/sample_copy.h"

namespace perfprof::heap {

// One allocation not freed yet: a copy of its sample (printed whole in per-allocation mode).
struct Allocation {
    perf::SampleCopy sample;
    uint64_t size = 0;                  // the size= expression's value; 0 without one
    const std::string* comm = nullptr;  // the allocating task's name (--comm), interned
};

class Outstanding {
public:
    using Entry = std::pair<const uint64_t, Allocation>;

    // The slot of an allocation of `ptr`, to fill. A pointer already present is replaced: its
    // free was lost, or had the alloc's timestamp and was ordered first.
    Allocation& alloc(uint64_t ptr) { return map_[ptr]; }
    // False for a pointer not present (allocated before we started, or already reported).
    bool free(uint64_t ptr) { return map_.erase(ptr) != 0; }

    size_t size() const { return map_.size(); }
    bool empty() const { return map_.empty(); }
    // The memory this table holds: the copies and the map nodes.
    uint64_t bytes() const;
    // Every entry, by (sample time, ptr).
    std::vector<const Entry*> by_time() const;
    // Forgets the allocations; interned names stay, their pointers stay valid.
    void clear() { map_.clear(); }

    // A stable pointer to `comm`'s text: each name is stored once.
    const std::string* intern(std::string_view comm) { return &*comms_.emplace(comm).first; }

private:
    std::map<uint64_t, Allocation> map_;
    std::unordered_set<std::string> comms_;  // node-based: element addresses are stable
};

// The allocations in `entries` that have a call chain, grouped by identical chain and, when
// `by_pid` (user frames resolve per process), by process: bytes, objects and, with `comms`,
// the per-name tallies. Unsorted: append_leak_groups sorts them.
std::vector<LeakGroup> group_by_stack(const std::vector<const Outstanding::Entry*>& entries, bool by_pid,
                                      bool comms);

}  // namespace perfprof::heap
