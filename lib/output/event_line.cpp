#include "output/event_line.h"

#include <cstdio>

#include "core/time.h"
#include "tep/lat.h"
#include "tep/tep.h"

namespace perfprof::output {

void format_event_line(Context& ctx, const Sample& s, std::string& line) {
    tep::CommonFields common{};
    const bool have_common = tep::read_common(s.raw, s.raw_size, common);
    // common_pid is the task the tracepoint fired in; fall back to the sample's tid.
    const uint32_t pid = have_common ? uint32_t(common.pid) : s.tid;
    char buf[96];
    line += ctx.wall(s.time);
    const std::string_view comm = ctx.comm(pid);
    std::snprintf(buf, sizeof(buf), " %16.*s %6u ", int(comm.size()), comm.data(), pid);
    line += buf;
    line += have_common ? tep::lat_flags(common.flags, common.preempt_count) : std::string("....");
    if (s.cpu == UINT32_MAX)
        line += " [---] ";
    else {
        std::snprintf(buf, sizeof(buf), " [%03u] ", s.cpu);
        line += buf;
    }
    line += core::format_evts(s.time);
    line += ": ";
    line += s.event->sys;
    line += ':';
    line += s.event->name;
    line += ": ";
    if (have_common) ctx.tep().render_info(s.raw, s.raw_size, int(s.cpu), s.time, line);
    line += '\n';
}

}  // namespace perfprof::output
