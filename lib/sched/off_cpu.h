// Off-CPU time of tasks (profile --off-cpu, serve's block profile): each time a watched task
// leaves the CPU, the state it left in and the stack it left with (a sched_switch sample),
// until it comes back (a context-switch record). Pure: the profiler feeds it and receives each
// finished wait.
//
// Records go missing on this project's VM (a scheduler event raised while a vCPU idles), so a
// wait whose switch-in never came is ended by the next sign that the task ran: one of its
// on-CPU samples, or its next switch-out. Both are counted (missing_switch_ins()).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "filter/record_field.h"
#include "perf-prof/profiler.h"
#include "perf-prof/sample.h"

namespace perfprof::tep {
class Tep;
}

namespace perfprof::sched {

// The event OffCpu is fed from: sched:sched_switch sampled at every switch-out with the stacks
// asked for (unwind::request_stacks) and `sample_type` (TID and TIME at least; RAW is added),
// opened with attr.context_switch for the switch-in records; and where its prev_state is.
struct SwitchEvent {
    EventSpec spec;
    filter::RecordField prev_state;
};
SwitchEvent switch_event(tep::Tep& tep, uint64_t sample_type, bool kernel, bool user, uint32_t dwarf_stack);

// The state a sched_switch prev_state names, as task-state prints it ("S", "D", "R" for a
// preempted task, ...); empty for a task leaving for good (dead or zombie).
std::string_view off_cpu_state(uint64_t prev_state);

class OffCpu {
public:
    struct Config {
        uint64_t min_ns = 0;     // waits shorter than this are ignored (--off-cpu-min)
        uint64_t period_ns = 0;  // a wait's weight in these units (remainders carried per task); 0: ns
    };
    // One finished wait: `units` of Config::period_ns (0 when the remainder is carried on).
    struct Wait {
        uint32_t pid = 0, tid = 0;
        uint32_t cpu = UINT32_MAX;  // where it left
        std::string_view state;
        uint64_t start = 0, ns = 0, units = 0;
        std::span<const uint64_t> chain;  // the stack it left with; valid during the call
    };
    using Sink = std::function<void(const Wait&)>;

    OffCpu(Config cfg, Sink sink) : cfg_(cfg), sink_(std::move(sink)) {}

    // A sched_switch sample of the task leaving (s.pid/s.tid, s.time, s.callchain).
    void switched_out(const Sample& s, uint64_t prev_state);
    // The task's switch-out record (PERF_RECORD_SWITCH, after the sched_switch sample): its
    // clock stops here, so the wait starts here. The time the kernel spent taking the sample's
    // stack is the task's CPU time, and is not counted twice.
    void left(uint32_t tid, uint64_t time);
    // The task came back onto a CPU.
    void switched_in(uint32_t tid, uint64_t time);
    // `ns` of the task's CPU time (an on-CPU sample's period): its weight in units, the
    // remainder carried with its waits' (a thread's on- and off-CPU units add up to its time).
    uint64_t on_cpu(uint32_t tid, uint64_t ns);
    // The task was seen running (an on-CPU sample): ends a wait whose switch-in was lost.
    void ran(uint32_t tid, uint64_t time);
    // Records were lost: no open wait can be trusted.
    void clear();
    // Ends every open wait at `now` (the end of the run; 0: the newest time fed).
    void finish(uint64_t now);

    uint64_t missing_switch_ins() const { return missing_; }
    size_t open_waits() const { return open_; }
    size_t tasks() const { return tasks_.size(); }

private:
    struct Task {
        uint32_t pid = 0, cpu = UINT32_MAX;
        bool open = false;
        std::string_view state;
        uint64_t start = 0, last = 0;  // the open wait's start; the last time the task was seen
        uint64_t carry = 0;            // ns not yet worth a unit
        std::vector<uint64_t> chain;
    };

    void end(uint32_t tid, Task& t, uint64_t time);
    // `ns` more of the task's time in Config::period_ns units, the remainder carried.
    uint64_t units(Task& t, uint64_t ns) const;
    void sweep(uint64_t now);

    Config cfg_;
    Sink sink_;
    std::unordered_map<uint32_t, Task> tasks_;
    size_t open_ = 0;
    uint64_t missing_ = 0;
    uint64_t last_sweep_ = 0;
    uint64_t newest_ = 0;  // the newest time fed: the end of the run when the caller cannot say
};

}  // namespace perfprof::sched
