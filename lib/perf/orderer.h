// Orderer: merges records from many ring buffers into one stream in non-decreasing time
// (SPEC §3.4), with loss windows (§3.3) placed where the merged stream reaches them.
//
// A pure component: the session copies records in with push()/push_lost() after draining
// its rings, then calls flush() (or flush_all() at exit) to receive what is safe to deliver.
//
// Release rule of flush() ("progress rule"), and why:
//   * Per ring, records are (almost) in time order, so a ring that delivered records up to
//     time t in this round will only produce records >= t later. A ring that pushed
//     something since the previous flush is "active"; its newest buffered time bounds what
//     may be released, because its next record may be anywhere above that time.
//   * A ring that pushed nothing since the previous flush is "idle": it imposes no bound.
//     It was drained (found empty) during this round, and the kernel writes each CPU's ring
//     as events happen, so anything older than what other rings hold would already have been
//     visible in it. Requiring a bound from idle rings would stall the whole merge on a quiet
//     CPU; SPEC §3.4 states this as "a buffer that becomes empty is dropped from the heap".
//   * So limit = min over active rings of their newest buffered time (no limit when no ring
//     is active), and flush() releases every buffered entry with time <= limit, k-way
//     merged by (time, ring index), stable in arrival order within a ring. A ring whose
//     buffered data runs out during the merge simply leaves the heap; the merge goes on.
//     Entries above the limit stay buffered for the next round (bounded: one round's excess).
//   * Records equal to the limit are released: a later record of the bounding ring can only
//     be >= the limit, which keeps the output non-decreasing.
//   * The idle rule can be wrong when a ring is drained before an event on its CPU is
//     written and another ring is drained after a later event (the drains of one round are
//     not atomic). Such a late record, and kernel reordering that escaped the per-ring
//     sort below, is delivered with its time raised to the last delivered time ("fixed").
//   * Within one ring a record older than what is already buffered for that ring (rare
//     kernel reordering) is inserted at its place, so it is only fixed if its place was
//     already delivered.
//
// Loss windows: push_lost() queues the window in its ring at key `start` (after any record
// of the same time pushed before it), so deliver() sees it exactly where the merged stream
// reaches lost.start and pairing profilers reset at the right place. If `start` is 0 it is
// taken as the ring's last pushed time. If `end` is 0 the window is still open: the next
// record pushed on that ring closes it (end = that record's time). An open window on an
// active ring halts the merge there ("loss prediction": we keep the data near the loss until
// its window is known); if its ring stays idle for a whole round, or at flush_all(), it is
// delivered with end = start (no later sample seen).
#pragma once

#include <linux/perf_event.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "perf-prof/sample.h"

namespace perfprof::perf {

// One delivered item: either a record or a loss window. Pointers are valid only during the
// deliver() call. `time` is the ordering time, raised to the last delivered time when the
// item arrived too late ("fixed"); users should take it instead of the record's own time.
struct Ordered {
    size_t ring = 0;
    uint64_t time = 0;
    const perf_event_header* record = nullptr;  // nullptr for a loss window
    const LostRange* lost = nullptr;            // nullptr for a record
    bool fixed = false;
};

struct OrdererStats {
    uint64_t delivered = 0;       // records delivered
    uint64_t fixed = 0;           // records delivered with a raised time
    uint64_t losts = 0;           // loss windows delivered
    uint64_t buffered_bytes = 0;  // payload bytes currently buffered
    uint64_t peak_bytes = 0;      // high-water mark of buffered_bytes
};

class Orderer {
public:
    explicit Orderer(size_t rings = 0) : rings_(rings) {}

    // Copies `rec` (rec.size bytes, contiguous). Rings are created on first use.
    void push(size_t ring, uint64_t time, const perf_event_header& rec);
    // Queues a loss window of `ring`; see the header comment for start/end defaults.
    void push_lost(size_t ring, const LostRange& lost);

    // Delivers what the release rule allows: deliver(const Ordered&), must not call back into
    // the orderer. Returns the number of items delivered.
    template <class F>
    size_t flush(F&& deliver) {
        return merge(round_limit(), false, deliver);
    }
    // Final drain (exit, SIGINT, -N): delivers everything buffered, open windows included.
    template <class F>
    size_t flush_all(F&& deliver) {
        return merge(kNoLimit, true, deliver);
    }

    const OrdererStats& stats() const { return stats_; }
    size_t buffered() const;                      // entries (records and windows) still buffered
    uint64_t last_time() const { return last_; }  // time of the last delivered item

private:
    static constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

    struct Entry {
        uint64_t time;
        uint32_t off;    // in words into Ring::arena
        uint32_t words;  // payload size in 8-byte words
        bool lost;       // payload is a LostRange, not a record
        bool open;       // loss window whose end is not known yet
    };
    struct Ring {
        std::vector<Entry> q;  // sorted by time, stable; [head, size) are buffered
        size_t head = 0;
        std::vector<uint64_t> arena;  // u64 storage keeps records 8-byte aligned
        bool active = false;          // pushed something since the previous flush
        bool open_lost = false;       // q holds an open loss window
        uint64_t last_pushed = 0;
        bool any_pushed = false;
    };

    Ring& ring_at(size_t ring);
    void enqueue(Ring& r, uint64_t time, const void* data, size_t bytes, bool lost, bool open);
    Entry* find_open(Ring& r);
    uint64_t round_limit() const;
    void end_round();  // compacts storage, clears `active`

    // Heap of ring indices ordered by (head time, ring index): std heaps are max-heaps, so
    // "less" means "later".
    bool later(uint32_t a, uint32_t b) const {
        uint64_t ta = rings_[a].q[rings_[a].head].time, tb = rings_[b].q[rings_[b].head].time;
        return ta > tb || (ta == tb && a > b);
    }
    void heap_push(uint32_t r) {
        heap_.push_back(r);
        std::push_heap(heap_.begin(), heap_.end(), [this](uint32_t a, uint32_t b) { return later(a, b); });
    }
    void heap_pop() {
        std::pop_heap(heap_.begin(), heap_.end(), [this](uint32_t a, uint32_t b) { return later(a, b); });
        heap_.pop_back();
    }

    template <class F>
    size_t merge(uint64_t limit, bool final, F& deliver) {
        heap_.clear();
        for (size_t i = 0; i < rings_.size(); i++)
            if (rings_[i].head < rings_[i].q.size()) heap_push(static_cast<uint32_t>(i));
        size_t n = 0;
        while (!heap_.empty()) {
            uint32_t ri = heap_.front();
            Ring& r = rings_[ri];
            Entry& e = r.q[r.head];
            if (e.time > limit) break;  // the heap minimum: everything else is later too
            // An open window on a ring still producing: wait for the record that closes it,
            // rather than hand out a window without an end. Everything after it waits too.
            if (e.lost && e.open && r.active && !final) break;
            heap_pop();

            Ordered o;
            o.ring = ri;
            o.time = e.time;
            if (o.time < last_) o.time = last_, o.fixed = true;
            last_ = o.time;
            const uint64_t* p = r.arena.data() + e.off;
            if (e.lost) {
                LostRange l;
                std::memcpy(static_cast<void*>(&l), p, sizeof(l));
                if (e.open) l.end = l.start, r.open_lost = false;  // idle ring or final drain
                o.lost = &l;
                stats_.losts++;
                deliver(static_cast<const Ordered&>(o));
            } else {
                o.record = reinterpret_cast<const perf_event_header*>(p);
                stats_.delivered++;
                if (o.fixed) stats_.fixed++;
                deliver(static_cast<const Ordered&>(o));
            }
            stats_.buffered_bytes -= uint64_t(e.words) * 8;
            ++n;
            if (++r.head < r.q.size()) heap_push(ri);
            // else: the ring ran dry and leaves the heap for this round (see header).
        }
        end_round();
        return n;
    }

    std::vector<Ring> rings_;
    std::vector<uint32_t> heap_;
    std::vector<uint64_t> scratch_;  // compaction buffer, swapped with ring arenas
    uint64_t last_ = 0;
    OrdererStats stats_;
};

}  // namespace perfprof::perf
