// kmemleak's pairing (SPEC §4.5.2): "pointer allocated" and "pointer freed" samples met by
// pointer in time order, the outstanding allocations kept, the totals counted, and the samples
// of a loss window set aside (their partner may be among the lost). Pure bookkeeping: the
// profiler reads the pointer and size of each sample and decides when to report.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "heap/outstanding.h"

namespace perfprof::heap {

class LeakPairing {
public:
    // False for a sample inside the last loss window: neither an allocation nor a free is
    // trusted there. A sample at or past the window's end closes it.
    bool accept(uint64_t time);
    // Events were lost between `start` and `end`. Without a known end (0, or not after start)
    // no window is set aside: only the report the profiler makes then marks the loss.
    void lost(uint64_t start, uint64_t end);

    // The slot of an allocation of `ptr`, to fill (a pointer already present is replaced).
    Allocation& alloc(uint64_t ptr) {
        ++total_alloc_;
        return table_.alloc(ptr);
    }
    // False for a pointer not outstanding (allocated before we started, or already reported).
    bool free(uint64_t ptr) {
        ++total_free_;
        return table_.free(ptr);
    }

    // The outstanding allocations to report at wall-clock time `now` (ns), oldest first: all,
    // or those older than `than_ns` (0 = all); `realtime` maps a sample time to the wall clock.
    std::vector<const Outstanding::Entry*> to_report(int64_t now, uint64_t than_ns,
                                                     const std::function<int64_t(uint64_t)>& realtime) const;

    // The statistics block (leak_report.h's append_stats) and a blank line; `list`: with the
    // ALLOC LIST line of SIGUSR1.
    void append_stats(bool list, std::string& out) const;

    uint64_t total_alloc() const { return total_alloc_; }
    uint64_t total_free() const { return total_free_; }
    Outstanding& table() { return table_; }
    const Outstanding& table() const { return table_; }

private:
    Outstanding table_;
    uint64_t total_alloc_ = 0, total_free_ = 0;
    uint64_t lost_start_ = 0, lost_end_ = 0;  // the loss window; lost_end_ 0 = none
};

}  // namespace perfprof::heap
