#include "perf/clock_sync.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "perf-prof/error.h"
#include "perf/record.h"
#include "tep/tep.h"

namespace perfprof::perf {

ClockSync::ClockSync(tep::Tep& tep) {
    try {
        tep_event* ev = tep.event("syscalls", "sys_enter_getpid");
        perf_event_attr a{};
        a.type = PERF_TYPE_TRACEPOINT;
        a.config = static_cast<uint64_t>(ev->id);
        a.sample_period = 1;
        a.sample_type = PERF_SAMPLE_TIME;
        a.exclude_callchain_user = 1;
        auto events = std::make_unique<EventList>();
        perf_evsel* e = events->add(a);
        events->open(e, any_cpu(), thread_map({static_cast<int>(::gettid())}), 0,
                     "syscalls:sys_enter_getpid");
        ring_ = std::make_unique<MappedRing>(EventList::fd(e, 0, 0), 1);
        events->enable();
        events_ = std::move(events);
    } catch (const Error&) {
        ring_.reset();
        events_.reset();
    }
}

bool ClockSync::sync(core::WallClock& clock) {
    if (!ring_) return false;
    ring_->reader().drain([](const perf_event_header&) {});  // stale samples of other getpids
    int64_t r0 = core::realtime_now_ns(), m0 = core::monotonic_now_ns();
    ::syscall(SYS_getpid);  // a raw syscall: glibc must not answer from a cache
    int64_t r1 = core::realtime_now_ns(), m1 = core::monotonic_now_ns();
    uint64_t perf_time = 0;
    ring_->reader().drain([&](const perf_event_header& h) {
        Sample s;
        if (h.type == PERF_RECORD_SAMPLE && decode_sample(h, PERF_SAMPLE_TIME, s)) perf_time = s.time;
    });
    if (!perf_time) return false;
    clock.calibrate(perf_time, r0 + (r1 - r0) / 2, m0 + (m1 - m0) / 2);
    return true;
}

}  // namespace perfprof::perf
