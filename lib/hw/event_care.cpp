#include "hw/event_care.h"

namespace perfprof::hw {

EventCareChecker::Verdict EventCareChecker::check(int event, int instance, uint64_t count, uint64_t period,
                                                  uint64_t time, const Sample* s) {
    Verdict v{};
    v.latest_sample = nullptr;
    const size_t e = event < 0 ? 0 : size_t(event), i = instance < 0 ? 0 : size_t(instance);
    if (e >= counters_.size()) counters_.resize(e + 1);
    std::vector<Counter>& per = counters_[e];
    if (i >= per.size()) per.resize(i + 1);
    Counter& c = per[i];
    if (c.seen && count - c.prev != period) {
        v.lost = true;
        v.lost_events = count - c.prev - 1;
        ++losses_;
    }
    c.seen = true;
    c.prev = count;

    if (i >= instances_.size()) instances_.resize(i + 1);
    Instance& in = instances_[i];
    if (in.seen && time < in.latest) {
        v.out_of_order = true;
        v.latest = in.latest;
        if (keep_) v.latest_sample = &in.copy;
        ++disorders_;
        return v;
    }
    in.seen = true;
    in.latest = time;
    if (keep_ && s) in.copy.assign(*s);
    return v;
}

}  // namespace perfprof::hw
