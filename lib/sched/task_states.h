// TaskStates: task-state's per-task state machine (SPEC §4.4.1). Fed the scheduler events in
// time order (switch-out, switch-in, wake-up; the fields already read), it closes each task's
// intervals — running (R), a sleep (S, D, T, t, I), waiting for a CPU (RD) — and hands them to
// a Sink. sched/roles.h feeds it the records of each planned event's role, sched/state_table.h
// sums and prints the intervals; profilers/task_state.cpp plans the events and wires them.
//
// Wake-ups the kernel did not report: a guest kernel (this project's VMs) at times delivers no
// record for a wake-up raised while a vCPU idles, and no PERF_RECORD_LOST either. A sleep whose
// switch-in is seen with no wake-up before it is closed at the switch-in: its length then
// includes the run-queue wait, which is unknown (and usually short), and no RD interval is made
// up for it. Such sleeps are counted (closed_at_switch_in()) for the note under the table. A
// sleep whose wake-up and switch-in were both missed (the task is switched out again while
// still asleep) cannot be measured: counted by unmeasured() and not reported as an interval.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "perf-prof/sample.h"
#include "perf/sample_copy.h"

namespace perfprof::sched {

// Table rows, in print order (SPEC §4.4.5).
enum Row { kR, kS, kD, kT, kt, kI, kRD, kRows };
extern const char* const kRowName[kRows];

// The row of a prev_state (masked to its low byte), -1 for combined or other values.
int row_of_state(uint64_t state);

// Where the closed intervals go.
class Sink {
public:
    virtual ~Sink() = default;
    // `tid` spent `ns` in `row`, from the event `start` (with copy_starts; may be null or
    // hold no event) to `end`. `end` is a wake-up, or a switch-in (R ends at a switch-out).
    virtual void closed(uint32_t tid, int row, uint64_t ns, const perf::SampleCopy* start,
                        const Sample& end) = 0;
};

class TaskStates {
public:
    struct Config {
        // -S/-D: only S/D switch-outs arrive; a record lives from the switch-out to the end
        // of the sleep, and neither R nor RD is measured.
        bool sleeps_only = false;
        unsigned reportable = 0;   // bit per Row: the sleeps that make intervals
        bool copy_starts = false;  // keep a copy of the event that began each state (--than)
        bool copy_runs = false;    // with copy_starts, of the switch-ins that begin R too (--timeline)
    };

    TaskStates(Config c, Sink& sink) : cfg_(c), sink_(sink) {}

    // The three transitions; pid <= 0 (idle, or a field that could not be read) is ignored.
    void switched_out(const Sample& s, int64_t pid, uint64_t prev_state);
    void switched_in(const Sample& s, int64_t pid);
    void woken(const Sample& s, int64_t pid, bool new_task);

    // Every record dropped: the states are unknown after a loss (SPEC §4.4.6).
    void clear();

    // Since the last take: sleeps closed at their switch-in for want of a wake-up record, and
    // sleeps not measured because neither their wake-up nor their switch-in was recorded.
    uint64_t take_closed_at_switch_in() { return std::exchange(closed_at_switch_in_, 0); }
    uint64_t take_unmeasured() { return std::exchange(unmeasured_, 0); }

    // For SIGUSR1's statistics (SPEC §4.4.7).
    size_t tasks() const { return tasks_.size(); }
    size_t copy_bytes() const;
    uint64_t copied() const { return copied_; }
    uint64_t freed() const { return freed_; }

private:
    struct Task {
        explicit Task(uint64_t s) : state(s) {}
        uint64_t state;
        uint64_t time = 0;
        std::unique_ptr<perf::SampleCopy> start;  // with copy_starts: the event that began `state`
    };
    using Tasks = std::unordered_map<uint32_t, Task>;

    void begin(Task& t, uint64_t state, const Sample& s);
    void erase(Tasks::iterator it);
    // The sleep `t` is in ends at `s` (a wake-up, or a switch-in when the wake-up was missed).
    void end_sleep(uint32_t tid, const Task& t, const Sample& s);
    // Records of tasks whose end we did not see (filtered names that renamed themselves, a
    // loss): dropped when they no longer exist, checked whenever the table doubled.
    void prune();

    Config cfg_;
    Sink& sink_;
    Tasks tasks_;
    size_t prune_at_ = 4096;
    uint64_t copied_ = 0, freed_ = 0;
    uint64_t closed_at_switch_in_ = 0, unmeasured_ = 0;
};

}  // namespace perfprof::sched
