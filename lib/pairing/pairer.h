// Pairer: multi-trace's keyed backup / find-previous algorithm (SPEC §4.6.3) with its loss
// handling (§4.6.12) and the scheduler's wake-up trick (step 6). profilers/multi_trace.cpp
// builds the events and their positions (add_positions makes the pairs) and computes keys;
// feed.h evaluates roles and feeds the traced samples in time order; what a pair means is the
// Impl's.
//
// Wake-ups the kernel did not report (a guest kernel at times delivers no record for a
// wake-up raised while a vCPU idles, with no PERF_RECORD_LOST): on a path switch-out → wake-up
// → switch-in (a position of wake-up events only between two of sched_switch), a switch-in
// that finds the switch-out of a sleep still backed up had its wake-up missed. The sleep is
// then paired with the switch-in as its end, as task-state counts it (the run-queue wait it
// includes is unknown, usually short), and counted for a note; the wake-up → switch-in pair,
// a run-queue latency, is not made up. A switch-out of a runnable task (preempted) is not a
// sleep: it is never closed so.
#pragma once

#include <cstdint>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "filter/record_field.h"
#include "pairing/model.h"
#include "pairing/timeline.h"
#include "perf/sample_copy.h"

namespace perfprof::pairing {

class Pairer {
public:
    // `planned`: the number of planned events (TraceEvent::index below it).
    Pairer(Env& env, size_t planned);

    // A pair of adjacent positions (SPEC §4.6.1); a repeated one is kept once.
    void add_pair(const TraceEvent* a, const TraceEvent* b);
    // Every pair of `positions` (the traced events of each position, in order; SPEC §4.6.1):
    // each event of one position with each of the next, and last → first with `cycle`. Sets
    // each event's need_find_prev (it may end a pair) and need_backup (it may start one).
    void add_positions(const std::vector<std::vector<TraceEvent*>>& positions, bool cycle);

    // Once the pairs and the implementation exist: `by_index` the traced and untraced events
    // by planned index, `plan` their specs. `keyed`: keys are expressions (else instances);
    // `order`: samples come in time order (loss windows are then known).
    void start(const std::vector<TraceEvent*>& by_index, const EventPlan& plan, Impl& impl,
               Timeline* timeline, bool keyed, bool order);
    bool trick() const { return wakeup_index_ >= 0; }

    // SPEC §4.6.3 steps 3-4 (and 6) for one traced sample of `te` with its key and role;
    // `node`: its place on the --detail timeline, else null.
    void process(const TraceEvent& te, const Sample& s, uint64_t key, int64_t role, Timeline::Node* node);
    // Backed-up event1s are handed back as lost (keyed ones all, instance keys of that
    // instance only); `newest` is the newest time seen.
    void lost(const LostRange& l, uint64_t newest);
    // The backups left at the end, handed back as remaining.
    void finish(uint64_t newest);
    // The live backup of `key` ends without its event2 at `time` (a task freed inside a
    // syscall): handed back as Remain::Freed.
    void close(uint64_t key, uint64_t time);
    // --detail: event1s backed up longer than `horizon` before `newest` let go of the timeline.
    void unpin_older(uint64_t newest, uint64_t horizon);

    // Notes under the final report (stdout): sleeps paired at their switch-in, and why
    // nothing paired when nothing did. `by_thread`: attached to tasks, not CPUs.
    void notes(FILE* out, bool by_thread) const;

    // SIGUSR1's statistics.
    size_t live() const { return live_; }
    size_t slots() const { return backups_.size(); }
    size_t bytes() const;
    uint64_t unpinned() const { return unpinned_; }
    uint64_t unnecessary() const { return unnecessary_; }

private:
    // A backed-up event1, by key (§4.6.3 step 4). Slots are kept when emptied, so that a key
    // seen again reuses its buffers; dead slots are swept when they outnumber the live ones.
    struct Backup {
        bool live = false;
        const TraceEvent* ev = nullptr;
        perf::SampleCopy copy;           // without --detail
        Timeline::Node* node = nullptr;  // with --detail: pinned on the timeline
        uint64_t time = 0;
        int instance = -1;
    };

    // Traced events only: they all have a planned event.
    int& slot(std::vector<int>& table, const TraceEvent* a, const TraceEvent* b) {
        return table[size_t(a->index) * planned_ + size_t(b->index)];
    }
    void setup_wakeup_trick(const std::vector<TraceEvent*>& by_index, const EventPlan& plan);
    void setup_missed_wakeups(const std::vector<TraceEvent*>& by_index, const EventPlan& plan);
    bool unnecessary_wakeup(const Sample& s) const;
    // The pair a switch-in `te` closes with `b`, a sleep's switch-out whose wake-up was not
    // recorded; -1 when there is none.
    int missed_wakeup_pair(const Backup& b, const Sample& prev, const TraceEvent& te) const;
    void release(Backup& b);
    void drop(uint64_t key, Backup& b, Remain why, uint64_t last);
    void sweep();

    Env& env_;
    size_t planned_;
    std::vector<int> pair_of_;  // [ev1 index * planned + ev2 index] -> pair id, -1 = none
    Impl* impl_ = nullptr;
    Timeline* timeline_ = nullptr;
    bool keyed_ = false, order_ = false;

    std::unordered_map<uint64_t, Backup> backups_;
    size_t live_ = 0;
    uint64_t unpinned_ = 0;
    uint64_t lost_start_ = 0, lost_end_ = 0;
    std::vector<uint64_t> seen_;  // samples per planned event
    uint64_t paired_ = 0;         // two() calls

    // The wake-up trick.
    int wakeup_index_ = -1, switch_index_ = -1;
    filter::RecordField wake_pid_, wake_cpu_, common_pid_, next_pid_;
    std::vector<int64_t> running_;  // per CPU: the task switched in last
    uint64_t unnecessary_ = 0;

    // Missed wake-ups: [switch-out index * planned + switch-in index] -> the pair of the
    // switch-out and the wake-up between, -1 = none; the prev_state of each sched_switch.
    std::vector<int> sleep_pair_of_;
    std::vector<filter::RecordField> prev_state_;
    uint64_t closed_at_switch_in_ = 0;
};

}  // namespace perfprof::pairing
