// The futex(2) syscall's tracepoints as `lock` and serve's mutex profile plan and read them:
// syscalls:sys_enter_futex (with the stacks asked for) and syscalls:sys_exit_futex, their
// fields located by name, and each sample turned into a FutexWaits enter or exit.
#pragma once

#include <cstdint>

#include "filter/record_field.h"
#include "lock/futex_waits.h"
#include "lock/stack_ids.h"
#include "perf-prof/profiler.h"

namespace perfprof::tep {
class Tep;
}
namespace perfprof::stack {
class Printer;
}

namespace perfprof::lock {

class FutexEvents {
public:
    // Appends the enter (with stacks when `stacks`: unwind::request_stacks' halves) and exit
    // events to `p`, in that order, and sets what a futex storm needs: bigger rings read in
    // batches, time order (a release and the wait it ends are on different CPUs).
    void plan(tep::Tep& tep, EventPlan& p, bool stacks, bool kernel, bool user, uint32_t dwarf_stack);

    // Feeds one sample of the planned events to `waits`; an enter's stack is interned in `ids`
    // (null: none), the process's maps read through `printer` the first time a stack is seen.
    // Samples of other events are ignored.
    void feed(const Sample& s, FutexWaits& waits, StackIds* ids, stack::Printer* printer) const;

private:
    int enter_ = -1, exit_ = -1;  // the events' indexes in the plan
    filter::RecordField uaddr_, op_, uaddr2_, ret_;
};

}  // namespace perfprof::lock
