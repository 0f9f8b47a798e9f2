// An integer field of a tracepoint's format, located by name for filter::RecordField reads
// (the profilers that read sched_switch, sched_wakeup and block records by hand).
#pragma once

#include <event-parse.h>

#include <string>

#include "filter/record_field.h"
#include "perf-prof/error.h"

namespace perfprof::event {

// Field `name` of tracepoint `ev`; `is_signed` overrides the format's flag (pids and
// prev_state are signed whatever it says). Throws Error when the format has no such field.
inline filter::RecordField tp_field(tep_event* ev, const char* name, bool is_signed = true) {
    tep_format_field* f = tep_find_field(ev, name);
    if (!f) throw Error(std::string(ev->system) + ":" + ev->name + " has no field " + name);
    return {uint32_t(f->offset), uint32_t(f->size), is_signed, true};
}

}  // namespace perfprof::event
