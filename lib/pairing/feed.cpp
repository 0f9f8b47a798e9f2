#include "pairing/feed.h"

#include <algorithm>

namespace perfprof::pairing {

void Feed::push(const TraceEvent& te, const Sample& s, uint64_t key) {
    newest_ = std::max(newest_, s.time);
    if (!timeline_) {
        if (!te.untraced) process(te, s, key, nullptr);
        return;
    }
    timeline_->push(s, key, te.key != nullptr);
    drain(false);
}

void Feed::lost(const LostRange& l) {
    // Pairs are decided in time order: what is still waiting on the timeline goes first.
    if (timeline_) drain(true);
    pairer_.lost(l, newest_);
}

void Feed::finish() {
    if (timeline_) drain(true);
    pairer_.finish(newest_);
}

// SPEC §4.6.3 step 2 for one traced sample; the pairer does the rest.
void Feed::process(const TraceEvent& te, const Sample& s, uint64_t key, Timeline::Node* node) {
    const int64_t role = te.role ? te.role->eval(filter::sample_context(s, ctx_.eval_hooks())) : 3;
    pairer_.process(te, s, key, role, node);
}

void Feed::drain(bool all) {
    while (Timeline::Node* n = timeline_->next_ready(all)) {
        const Sample s = Timeline::sample(n);
        // A nested profiler's sample (s.from) is context only, as untraced events are.
        if (s.from || s.event_index < 0 || size_t(s.event_index) >= by_index_.size()) continue;
        const TraceEvent* te = by_index_[size_t(s.event_index)];
        if (!te->untraced) process(*te, s, Timeline::key(n), n);
    }
    // Every tenth of the horizon: event1s older than the horizon let go of the timeline.
    if (newest_ >= next_unpin_) {
        next_unpin_ = newest_ + horizon_ / 10;
        pairer_.unpin_older(newest_, horizon_);
    }
    timeline_->release();
}

}  // namespace perfprof::pairing
