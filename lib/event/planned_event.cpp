#include "event/planned_event.h"

#include <cstdio>

#include "perf-prof/error.h"
#include "unwind/call_graph.h"

namespace perfprof::event {

namespace {

EventKind kind_of(Kind k) {
    switch (k) {
        case Kind::Kprobe:
            return EventKind::Kprobe;
        case Kind::Kretprobe:
            return EventKind::Kretprobe;
        case Kind::Uprobe:
            return EventKind::Uprobe;
        case Kind::Uretprobe:
            return EventKind::Uretprobe;
        default:
            return EventKind::Tracepoint;
    }
}

}  // namespace

EventSpec planned_event(const Resolved& r, bool stack, bool user, bool kernel, uint32_t dwarf_stack) {
    EventSpec ev;
    ev.sys = r.item.sys;
    ev.name = r.item.name;
    ev.kind = kind_of(r.item.kind);
    ev.attr = r.attr;
    ev.attr.sample_period = 1;
    ev.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
    ev.attr.read_format = PERF_FORMAT_ID;
    ev.attr.pinned = 1;
    if (stack) {
        unwind::request_stacks(ev.attr, kernel, user, dwarf_stack);
        if (r.item.attrs.max_stack) ev.attr.sample_max_stack = uint16_t(r.item.attrs.max_stack);
    }
    ev.filter = r.item.filter;
    ev.probe = r.probe;
    ev.cpus = r.item.attrs.cpus;
    ev.tp = r.tp;
    ev.fields = r.fields;
    return ev;
}

std::unique_ptr<filter::Program> compile_attr(const Resolved& r, const char* attr, const std::string& text,
                                              const filter::CompileOptions& options) {
    if (text.empty()) return nullptr;
    try {
        return std::make_unique<filter::Program>(filter::compile(text, r.fields, options));
    } catch (const filter::CompileError& e) {
        std::fputs(e.diagnostics().c_str(), stdout);
        std::fflush(stdout);
        throw Error(r.item.sys + ":" + r.item.name + ": " + attr + "=" + text + ": " + e.what());
    }
}

}  // namespace perfprof::event
