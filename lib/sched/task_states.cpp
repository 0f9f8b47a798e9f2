#include "sched/task_states.h"

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace perfprof::sched {

namespace {

// SPEC's R is both "on a CPU" and "runnable, waiting for one"; kept apart here, so that a
// switch-in seen twice (a switch-out the kernel never reported, as for some VM agent threads)
// is not taken for a run delay, nor waiting time for running time.
constexpr uint64_t kRunning = 0;         // prev_state of a task switched out runnable
constexpr uint64_t kRunnable = 0x20000;  // woken or preempted: waiting for a CPU (RD)
constexpr uint64_t kOnCpu = 0x40000;     // switched in (R)
constexpr uint64_t kInterruptible = 1, kUninterruptible = 2, kStopped = 4, kTraced = 8;
constexpr uint64_t kIdle = 0x80;         // TASK_REPORT_IDLE
constexpr uint64_t kDead = 16 | 32;      // EXIT_DEAD | EXIT_ZOMBIE
constexpr uint64_t kPreempted = 0x100;   // TASK_REPORT_MAX: switched out while runnable
constexpr uint64_t kKillableOld = 0x82;  // D on kernels that reported TASK_WAKEKILL
constexpr uint64_t kStateMask = 0xff;
constexpr uint64_t kUnknown = 0x10000;  // a record made by a wake-up: its state before is unknown

}  // namespace

const char* const kRowName[kRows] = {"R ", "S ", "D ", "T ", "t ", "I ", "RD"};

int row_of_state(uint64_t state) {
    switch (state) {
        case kInterruptible:
            return kS;
        case kUninterruptible:
        case kKillableOld:
            return kD;
        case kStopped:
            return kT;
        case kTraced:
            return kt;
        case kIdle:
            return kI;
        default:
            return -1;
    }
}

void TaskStates::switched_out(const Sample& s, int64_t pid, uint64_t prev_state) {
    if (pid <= 0) return;
    const uint32_t tid = uint32_t(pid);
    auto it = tasks_.find(tid);
    if (it != tasks_.end()) {
        const int row = row_of_state(it->second.state);
        if (!cfg_.sleeps_only && it->second.state == kOnCpu)
            sink_.closed(tid, kR, s.time - it->second.time, it->second.start.get(), s);
        else if (row >= 0 && (cfg_.reportable >> row & 1))
            ++unmeasured_;  // asleep, yet switched out again: its wake-up and switch-in were lost
    }
    if (cfg_.sleeps_only) {
        // Only S/D sleeps arrive; a record lives until the sleep ends.
        Task& t = it != tasks_.end() ? it->second : tasks_.try_emplace(tid, kUnknown).first->second;
        begin(t, prev_state & kStateMask, s);
        return;
    }
    if (prev_state & kDead) {
        if (it != tasks_.end()) erase(it);
        return;
    }
    Task& t = it != tasks_.end() ? it->second : tasks_.try_emplace(tid, kUnknown).first->second;
    begin(t, prev_state == kPreempted || prev_state == kRunning ? kRunnable : prev_state & kStateMask, s);
    if (tasks_.size() > prune_at_) prune();
}

void TaskStates::switched_in(const Sample& s, int64_t pid) {
    if (pid <= 0) return;
    const uint32_t tid = uint32_t(pid);
    if (cfg_.sleeps_only) {
        // A record still here is a sleep whose wake-up was not recorded.
        auto it = tasks_.find(tid);
        if (it == tasks_.end()) return;
        const int row = row_of_state(it->second.state);
        if (row >= 0 && (cfg_.reportable >> row & 1)) {
            ++closed_at_switch_in_;
            end_sleep(tid, it->second, s);
        }
        erase(it);
        return;
    }
    auto [it, fresh] = tasks_.try_emplace(tid, kUnknown);
    Task& t = it->second;
    const int row = fresh ? -1 : row_of_state(t.state);
    if (row >= 0 && (cfg_.reportable >> row & 1)) {
        // No wake-up between: the sleep ends here, and no run delay is made up for it.
        ++closed_at_switch_in_;
        end_sleep(tid, t, s);
    } else if (!fresh && t.state == kRunnable) {
        sink_.closed(tid, kRD, s.time - t.time, t.start.get(), s);
    }
    // Running from now; R intervals are not printed by --than, so only a timeline copies.
    if (cfg_.copy_runs) {
        begin(t, kOnCpu, s);
        return;
    }
    t.state = kOnCpu;
    t.time = s.time;
    if (t.start) t.start->event = nullptr;
}

void TaskStates::woken(const Sample& s, int64_t pid, bool new_task) {
    if (pid <= 0) return;
    const uint32_t tid = uint32_t(pid);
    auto it = tasks_.find(tid);
    if (it == tasks_.end()) {
        if (cfg_.sleeps_only) return;  // its sleep began before we looked
        it = tasks_.try_emplace(tid, kUnknown).first;
    }
    Task& t = it->second;
    const int row = row_of_state(t.state);
    if (row >= 0 && (cfg_.reportable >> row & 1)) end_sleep(tid, t, s);
    if (cfg_.sleeps_only) {
        erase(it);
        return;
    }
    // Runnable from now, unless it already was (a wake-up of a running task).
    if (new_task || (t.state != kRunnable && t.state != kOnCpu)) begin(t, kRunnable, s);
}

void TaskStates::clear() {
    for (auto& [tid, t] : tasks_)
        if (t.start) ++freed_;
    tasks_.clear();
}

size_t TaskStates::copy_bytes() const {
    size_t n = 0;
    for (const auto& [tid, t] : tasks_)
        if (t.start) n += t.start->bytes();
    return n;
}

void TaskStates::begin(Task& t, uint64_t state, const Sample& s) {
    t.state = state;
    t.time = s.time;
    if (!cfg_.copy_starts) return;
    if (!t.start) t.start = std::make_unique<perf::SampleCopy>();
    t.start->assign(s);
    ++copied_;
}

void TaskStates::erase(Tasks::iterator it) {
    if (it->second.start) ++freed_;
    tasks_.erase(it);
}

void TaskStates::end_sleep(uint32_t tid, const Task& t, const Sample& s) {
    sink_.closed(tid, row_of_state(t.state), s.time - t.time, t.start.get(), s);
}

void TaskStates::prune() {
    for (auto it = tasks_.begin(); it != tasks_.end();) {
        if (::kill(pid_t(it->first), 0) != 0 && errno == ESRCH) {
            if (it->second.start) ++freed_;
            it = tasks_.erase(it);
        } else {
            ++it;
        }
    }
    prune_at_ = std::max<size_t>(4096, tasks_.size() * 2);
}

}  // namespace perfprof::sched
