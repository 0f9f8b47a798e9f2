// The dispatcher's reports: lost-event totals (SPEC §3.3) and the SIGUSR2 state dump
// (SPEC §1.11).
#include <cstdio>

#include "perf/dispatcher.h"
#include "sym/symbolizer.h"

namespace perfprof::perf {

void Dispatcher::report_lost(Device& d) {
    if (!d.lost_pending || d.opt.exit_n) return;
    std::fprintf(stderr, "%s %s: lost %llu events (total)\n",
                 core::format_wall(core::realtime_now_ns()).c_str(), d.name.c_str(),
                 (unsigned long long)d.lost_total);
    d.lost_pending = 0;
}

void Dispatcher::report_lost_all() {
    for (auto& d : devices_) report_lost(*d);
}

void Dispatcher::dump_state() {
    for (const auto& dp : devices_) {
        const Device& d = *dp;
        std::printf(
            "device %s%s%s: %zu ring(s), %zu event(s), %d pages per ring, %llu samples, %llu lost%s\n",
            d.name.c_str(), d.parent ? " forwarding to " : "", d.parent ? d.parent->name.c_str() : "",
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
    std::printf("  task names: %zu\n", comms_.size());
    symbols_.dump(stdout);
    std::fflush(stdout);
}

}  // namespace perfprof::perf
