#include "output/event_line.h"

#include <cstdio>
#include <cstring>

#include "core/format.h"
#include "core/time.h"
#include "tep/lat.h"
#include "tep/tep.h"

namespace perfprof::output {

namespace {

uint64_t raw_u64(const Sample& s, uint32_t off) {
    uint64_t v = 0;
    if (s.raw && s.raw_size >= off + 8) std::memcpy(&v, static_cast<const uint8_t*>(s.raw) + off, 8);
    return v;
}

// Probe INFO (SPEC §3.9): entry probes print the probed address, return probes the return
// address and the function.
void probe_info(const Sample& s, std::string& line) {
    char buf[64];
    switch (s.event->kind) {
        case EventKind::Kprobe:
        case EventKind::Uprobe:
            std::snprintf(buf, sizeof(buf), "(%#llx)", (unsigned long long)raw_u64(s, 8));
            break;
        default:
            std::snprintf(buf, sizeof(buf), "(%#llx <- %#llx)", (unsigned long long)raw_u64(s, 16),
                          (unsigned long long)raw_u64(s, 8));
            break;
    }
    line += buf;
}

}  // namespace

void append_line_head(Context& ctx, uint64_t time, uint32_t tid, uint32_t cpu, std::string_view lat,
                      char marker, std::string& line, std::string_view title) {
    if (!title.empty()) {
        line += title;
        if (title.size() < 26) line.append(26 - title.size(), ' ');
        if (!marker) marker = ' ';
    } else {
        ctx.wall(time, line);
    }
    if (marker) {
        line += ' ';
        line += marker;
    }
    line += ' ';
    const std::string_view comm = ctx.comm(tid).substr(0, 16);
    line.append(16 - comm.size(), ' ');
    line += comm;
    line += ' ';
    core::append_uint(line, tid, 6);
    if (!lat.empty()) {
        line += ' ';
        line += lat;
    }
    if (cpu == UINT32_MAX) {
        line += " [---] ";
    } else {
        line += " [";
        core::append_uint(line, cpu, 3, '0');
        line += "] ";
    }
    core::append_evts(time, line);
    line += ": ";
}

void format_event_line(Context& ctx, const Sample& s, std::string& line, char marker) {
    tep::CommonFields common{};
    const bool have_common = tep::read_common(s.raw, s.raw_size, common);
    // common_pid is the task the tracepoint fired in; fall back to the sample's tid.
    const uint32_t pid = have_common ? uint32_t(common.pid) : s.tid;
    append_line_head(ctx, s.time, pid, s.cpu,
                     have_common ? tep::lat_flags(common.flags, common.preempt_count) : std::string("...."),
                     marker, line, s.title);
    line += s.event->sys;
    line += ':';
    line += s.event->name;
    line += ": ";
    if (s.event->kind != EventKind::Tracepoint && s.event->kind != EventKind::Other)
        probe_info(s, line);
    else if (have_common)
        ctx.tep().render_info(s.raw, s.raw_size, int(s.cpu), s.time, line);
    line += '\n';
}

}  // namespace perfprof::output
