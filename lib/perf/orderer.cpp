// Orderer: buffering, loss-window bookkeeping and per-round compaction. The merge itself is
// a template in orderer.h so the deliver callback inlines.
#include "perf/orderer.h"

namespace perfprof::perf {

Orderer::Ring& Orderer::ring_at(size_t ring) {
    if (ring >= rings_.size()) rings_.resize(ring + 1);  // forwarding children join late
    return rings_[ring];
}

void Orderer::enqueue(Ring& r, uint64_t time, const void* data, size_t bytes, bool lost, bool open) {
    size_t words = (bytes + 7) / 8;
    auto off = static_cast<uint32_t>(r.arena.size());
    r.arena.resize(r.arena.size() + words);
    r.arena.back() = 0;  // no stale bytes in the padding of a size that is not a multiple of 8
    std::memcpy(r.arena.data() + off, data, bytes);

    // Keep the ring's queue sorted: a record older than what the ring already buffers (kernel
    // reordering) goes to its place, after entries of equal time so arrival order is stable.
    // It is nearly always the tail, so this is O(1) in practice.
    size_t pos = r.q.size();
    while (pos > r.head && r.q[pos - 1].time > time) --pos;
    r.q.insert(r.q.begin() + static_cast<std::ptrdiff_t>(pos),
               Entry{time, off, static_cast<uint32_t>(words), lost, open});

    r.active = true;
    stats_.buffered_bytes += uint64_t(words) * 8;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.buffered_bytes);
}

Orderer::Entry* Orderer::find_open(Ring& r) {
    // The open window is the last loss queued; records inserted after it are few.
    for (size_t i = r.q.size(); i > r.head; --i)
        if (r.q[i - 1].lost && r.q[i - 1].open) return &r.q[i - 1];
    return nullptr;
}

void Orderer::push(size_t ring, uint64_t time, const perf_event_header& rec) {
    Ring& r = ring_at(ring);
    if (r.open_lost) {
        // The first record after a loss closes its window. A reordered record older than the
        // start cannot make the window negative.
        if (Entry* e = find_open(r)) {
            LostRange l;
            std::memcpy(static_cast<void*>(&l), r.arena.data() + e->off, sizeof(l));
            l.end = std::max(time, l.start);
            std::memcpy(r.arena.data() + e->off, &l, sizeof(l));
            e->open = false;
        }
        r.open_lost = false;
    }
    enqueue(r, time, &rec, rec.size, false, false);
    r.last_pushed = time;
    r.any_pushed = true;
}

void Orderer::push_lost(size_t ring, const LostRange& lost) {
    Ring& r = ring_at(ring);
    LostRange l = lost;
    // Without a start, the loss follows the ring's last record; a ring that never delivered
    // anything lost its very first records, which belong at the current stream position.
    if (l.start == 0) l.start = r.any_pushed ? r.last_pushed : last_;

    if (r.open_lost) {
        // Two losses with no record between are one window: add up the counts.
        if (Entry* e = find_open(r)) {
            LostRange prev;
            std::memcpy(static_cast<void*>(&prev), r.arena.data() + e->off, sizeof(prev));
            prev.count += l.count;
            if (l.end != 0) prev.end = std::max(l.end, prev.start), e->open = false, r.open_lost = false;
            std::memcpy(r.arena.data() + e->off, &prev, sizeof(prev));
            r.active = true;
            return;
        }
        r.open_lost = false;
    }
    bool open = l.end == 0;
    enqueue(r, l.start, &l, sizeof(l), true, open);
    r.open_lost = open;
}

uint64_t Orderer::round_limit() const {
    uint64_t limit = kNoLimit;
    for (const Ring& r : rings_)
        if (r.active && r.head < r.q.size()) limit = std::min(limit, r.q.back().time);
    return limit;
}

void Orderer::end_round() {
    for (Ring& r : rings_) {
        r.active = false;
        if (r.head == 0) continue;
        if (r.head == r.q.size()) {  // fully delivered: keep the capacity for reuse
            r.q.clear();
            r.arena.clear();
            r.head = 0;
            continue;
        }
        // Entries above the limit remain: move their payloads to the front of a fresh arena
        // (entries are sorted by time, so their offsets are not monotone; copy per entry).
        scratch_.clear();
        for (size_t i = r.head; i < r.q.size(); i++) {
            Entry& e = r.q[i];
            auto off = static_cast<uint32_t>(scratch_.size());
            scratch_.insert(scratch_.end(), r.arena.begin() + e.off, r.arena.begin() + e.off + e.words);
            e.off = off;
        }
        r.arena.swap(scratch_);
        r.q.erase(r.q.begin(), r.q.begin() + static_cast<std::ptrdiff_t>(r.head));
        r.head = 0;
    }
}

size_t Orderer::buffered() const {
    size_t n = 0;
    for (const Ring& r : rings_) n += r.q.size() - r.head;
    return n;
}

}  // namespace perfprof::perf
