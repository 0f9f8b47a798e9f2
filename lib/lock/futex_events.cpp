#include "lock/futex_events.h"

#include <linux/perf_event.h>

#include "event/tracepoint.h"
#include "stack/stack_printer.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof::lock {

namespace {

EventSpec syscall_event(tep::Tep& tep, const char* name, bool stacks, bool kernel, bool user,
                        uint32_t dwarf_stack) {
    EventSpec e = event::sampled_tracepoint(tep, "syscalls", name,
                                            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW);
    if (stacks) unwind::request_stacks(e.attr, kernel, user, dwarf_stack);
    return e;
}

}  // namespace

void FutexEvents::plan(tep::Tep& tep, EventPlan& p, bool stacks, bool kernel, bool user,
                       uint32_t dwarf_stack) {
    EventSpec enter = syscall_event(tep, "sys_enter_futex", stacks, kernel, user, dwarf_stack);
    EventSpec exit = syscall_event(tep, "sys_exit_futex", false, kernel, user, dwarf_stack);
    // Addresses are unsigned whatever the format says; op and ret are signed.
    uaddr_ = event::tp_field(enter.tp, "uaddr", false);
    op_ = event::tp_field(enter.tp, "op");
    uaddr2_ = event::tp_field(enter.tp, "uaddr2", false);
    ret_ = event::tp_field(exit.tp, "ret");
    enter_ = int(p.events.size());
    p.events.push_back(std::move(enter));
    exit_ = int(p.events.size());
    p.events.push_back(std::move(exit));
    // A wait returns 0 or an error; a release the number of waiters it woke, which the
    // pairing never reads: the kernel drops those exits (a quarter of a handoff's records).
    p.events.back().filter = "ret <= 0";
    // A futex storm makes two records a call: 1 MiB a CPU (2 MiB with stacks), read in batches.
    p.pages = stacks ? 512 : 256;
    p.per_event_wakeup = false;
    p.order = true;
}

void FutexEvents::feed(const Sample& s, FutexWaits& waits, StackIds* ids, stack::Printer* printer) const {
    if (!s.raw) return;
    if (s.event_index == exit_) {
        waits.exit(s.time, s.tid, ret_.read_or(s.raw, s.raw_size, 0));
        return;
    }
    if (s.event_index != enter_) return;
    Enter e;
    e.tid = s.tid;
    e.op = op_.read_or(s.raw, s.raw_size, -1);
    if (role_of(e.op) == Role::Other) {
        waits.enter(e);  // still closes what the thread had open
        return;
    }
    e.time = s.time;
    e.pid = s.pid;
    e.uaddr = uint64_t(uaddr_.read_or(s.raw, s.raw_size, 0));
    e.uaddr2 = uint64_t(uaddr2_.read_or(s.raw, s.raw_size, 0));
    if (ids && s.callchain) {
        bool fresh = false;
        e.stack = ids->intern(s.pid, s.callchain, s.callchain_nr, &fresh);
        if (fresh && printer) printer->prepare(s.pid);  // its maps read now, while it lives
    }
    waits.enter(e);
}

}  // namespace perfprof::lock
