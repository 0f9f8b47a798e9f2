// Feed: how multi-trace's samples reach the Pairer (SPEC §4.6.3 step 2). Without --detail each
// traced sample goes straight to it; with --detail every sample goes onto the Timeline first and
// is paired once the window after it is there (Timeline::next_ready), and before a loss or the
// end whatever waits there is paired first, so that pairs are decided in time order. Event1s
// older than the horizon let go of the timeline, so that one whose event2 never comes (a
// switch-in the kernel did not record, a task that exited) does not hold every later sample.
#pragma once

#include <cstdint>
#include <vector>

#include "filter/expr.h"
#include "pairing/model.h"
#include "pairing/pairer.h"
#include "pairing/timeline.h"

namespace perfprof::pairing {

class Feed {
public:
    // `by_index`: the events by planned index (Sample::event_index); `ctx`'s hooks evaluate
    // role=; `timeline` null without --detail; `horizon` in sample time units (--detail only).
    Feed(Context& ctx, Pairer& pairer, const std::vector<TraceEvent*>& by_index, Timeline* timeline,
         uint64_t horizon)
        : ctx_(ctx), pairer_(pairer), by_index_(by_index), timeline_(timeline), horizon_(horizon) {}

    // One delivered sample of `te` (traced, untraced or a nested profiler's) with its key.
    void push(const TraceEvent& te, const Sample& s, uint64_t key);
    // Events were lost: what waits on the timeline is paired first, then the backups go.
    void lost(const LostRange& l);
    // The end: what waits is paired, the backups left are handed back as remaining.
    void finish();

    uint64_t newest() const { return newest_; }

    // The horizon of --detail (see above): long enough for every pair up to the threshold
    // `limit` to print whole with its window, and at least `floor` (both in sample time units).
    static uint64_t horizon(uint64_t limit, const DetailSpec& d, uint64_t floor) {
        const uint64_t whole = limit + d.before + d.after;
        return whole > floor ? whole : floor;
    }

private:
    void process(const TraceEvent& te, const Sample& s, uint64_t key, Timeline::Node* node);
    void drain(bool all);

    Context& ctx_;
    Pairer& pairer_;
    const std::vector<TraceEvent*>& by_index_;
    Timeline* timeline_;
    uint64_t horizon_;
    uint64_t newest_ = 0, next_unpin_ = 0;
};

}  // namespace perfprof::pairing
