#include "event/tracepoint.h"

#include <linux/perf_event.h>

#include "tep/tep.h"

namespace perfprof::event {

EventSpec sampled_tracepoint(tep::Tep& tep, std::string_view sys, std::string_view name,
                             uint64_t sample_type) {
    EventSpec e;
    e.sys = sys;
    e.name = name;
    e.tp = tep.event(sys, name);
    e.attr.type = PERF_TYPE_TRACEPOINT;
    e.attr.config = uint64_t(e.tp->id);
    e.attr.sample_period = 1;
    e.attr.sample_type = sample_type;
    return e;
}

}  // namespace perfprof::event
