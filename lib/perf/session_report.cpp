// The session's reports: lost-event totals (SPEC §3.3), --usage-self, and the SIGUSR2 state
// dump (SPEC §1.11).
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

#include "perf/session.h"
#include "perf/session_device.h"
#include "sym/symbolizer.h"

namespace perfprof::perf {

namespace {

int64_t tv_ns(const timeval& tv) {
    return int64_t(tv.tv_sec) * 1000000000 + int64_t(tv.tv_usec) * 1000;
}

}  // namespace

void Session::report_lost(Device& d) {
    if (!d.lost_pending || d.opt.exit_n) return;
    std::fprintf(stderr, "%s %s: lost %llu events (total)\n",
                 core::format_wall(core::realtime_now_ns()).c_str(), d.info.name,
                 (unsigned long long)d.lost_total);
    d.lost_pending = 0;
}

void Session::usage_self() {
    rusage ru;
    ::getrusage(RUSAGE_SELF, &ru);
    int64_t now = core::monotonic_now_ns();
    int64_t u = tv_ns(ru.ru_utime), s = tv_ns(ru.ru_stime);
    double span = double(std::max<int64_t>(now - usage_wall_, 1));
    std::printf("%s CPU %%usr %.2f %%sys %.2f MAXRSS %ldk\n",
                core::format_wall(core::realtime_now_ns()).c_str(), 100.0 * double(u - usage_utime_) / span,
                100.0 * double(s - usage_stime_) / span, ru.ru_maxrss);
    usage_wall_ = now;
    usage_utime_ = u;
    usage_stime_ = s;
}

void Session::dump_state() {
    usage_self();
    for (const auto& dp : devices_) {
        const Device& d = *dp;
        std::printf(
            "device %s%s%s: %zu ring(s), %zu event(s), %d pages per ring, %llu samples, %llu lost%s\n",
            d.info.name, d.parent ? " forwarding to " : "", d.parent ? d.parent->info.name : "",
            d.rings.size(), d.plan.events.size(), d.pages, (unsigned long long)d.samples,
            (unsigned long long)d.lost_total, d.closed ? " (closed)" : "");
        for (size_t e = 0; e < d.plan.events.size(); e++) {
            const EventSpec& ev = d.plan.events[e];
            std::printf("  event %s sample_type %#llx%s%s%s\n", event_name(ev).c_str(),
                        (unsigned long long)ev.attr.sample_type, ev.filter.empty() ? "" : " filter ",
                        ev.filter.c_str(), d.user_filters[e] ? " (in userspace)" : "");
        }
        for (size_t i : d.rings) {
            const Ring& r = rings_[i];
            std::printf("  instance %s %d: lost %llu%s\n", r.cpu >= 0 ? "cpu" : "thread",
                        r.cpu >= 0 ? r.cpu : r.tid, (unsigned long long)r.lost, r.hup ? " (exited)" : "");
        }
    }
    if (orderer_) {
        const OrdererStats& st = orderer_->stats();
        std::printf(
            "  order: %llu delivered, %llu fixed, %llu lost windows, %llu bytes buffered (peak %llu)\n",
            (unsigned long long)st.delivered, (unsigned long long)st.fixed, (unsigned long long)st.losts,
            (unsigned long long)st.buffered_bytes, (unsigned long long)st.peak_bytes);
    }
    std::printf("  task names: %zu\n", comms_->size());
    symbols_.dump(stdout);
    std::fflush(stdout);
}

}  // namespace perfprof::perf
