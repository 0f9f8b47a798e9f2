// What a tracing profiler plans for a resolved event (trace, multi-trace): the EventSpec of
// SPEC §12's template and the EXPR attributes compiled against the event's fields.
#pragma once

#include <memory>
#include <string>

#include "event/resolve.h"
#include "filter/expr.h"
#include "perf-prof/profiler.h"

namespace perfprof::event {

// sample_period 1, TID TIME ID CPU PERIOD RAW, read_format ID, pinned; with `stack` also the
// call chain (the `user` and `kernel` halves, max-stack=), and the event's filter, probe,
// cpus=, format and fields. `r` is a real event, not a nested profiler.
EventSpec planned_event(const Resolved& r, bool stack, bool user, bool kernel, uint32_t dwarf_stack = 0);

// The attribute `attr`=`text` (key=, role=, exec=, ...) compiled against `r`'s fields; null
// when `text` is empty. A compile error prints the §2.7.8 diagnostics on stdout and throws
// Error "{sys}:{name}: {attr}={text}: {message}".
std::unique_ptr<filter::Program> compile_attr(const Resolved& r, const char* attr, const std::string& text,
                                              const filter::CompileOptions& options = {});

}  // namespace perfprof::event
