// A tracepoint as the profilers that plan their own events open it (sampled at every event),
// and its integer fields located by name for filter::RecordField reads.
#pragma once

#include <event-parse.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "filter/record_field.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"

namespace perfprof::tep {
class Tep;
}

namespace perfprof::event {

// SYS:NAME as an event sampled at every hit (sample_period 1) with `sample_type`; its format
// is loaded through `tep`, which throws Error when the tracepoint does not exist.
EventSpec sampled_tracepoint(tep::Tep& tep, std::string_view sys, std::string_view name,
                             uint64_t sample_type);

// Field `name` of tracepoint `ev`; `is_signed` overrides the format's flag (pids and
// prev_state are signed whatever it says). Throws Error when the format has no such field.
inline filter::RecordField tp_field(tep_event* ev, const char* name, bool is_signed = true) {
    tep_format_field* f = tep_find_field(ev, name);
    if (!f) throw Error(std::string(ev->system) + ":" + ev->name + " has no field " + name);
    return {uint32_t(f->offset), uint32_t(f->size), is_signed, true};
}

}  // namespace perfprof::event
