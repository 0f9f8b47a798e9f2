// Following the tasks that attached tasks create (SPEC §3.10, --ptrace): every task is
// ptrace-seized with clone/fork/vfork tracing, so a new thread or process stops before its
// first instruction; the session opens its events on it (or widens its filters) and only then
// lets it run. Every signal a tracee receives is re-injected; group stops stay stops. Detaching
// (at the end, on SIGINT, on an error) interrupts each tracee and lets it go with the signal
// it was about to receive, so nothing is left attached and no signal is lost.
//
// While a follower exists it reaps every child of perf-prof (waitpid(-1, __WALL)): all of them
// are its tracees (the workload is seized before it is released to exec).
#pragma once

#include <sys/types.h>

#include <functional>
#include <unordered_map>
#include <vector>

namespace perfprof::perf {

class TaskFollower {
public:
    // Seizes `tids` (each thread given explicitly). `pids` adds every thread of these
    // processes, re-reading /proc/PID/task until no new thread shows up. Throws Error naming
    // the task when one cannot be seized; those seized already are detached again.
    TaskFollower(const std::vector<int>& tids, const std::vector<int>& pids = {});
    ~TaskFollower();  // detach()
    TaskFollower(const TaskFollower&) = delete;
    TaskFollower& operator=(const TaskFollower&) = delete;

    // Every task followed so far, seized ones first, then new ones in order of creation.
    const std::vector<int>& tasks() const { return tasks_; }
    // Tasks that have not exited.
    size_t alive() const { return state_.size(); }

    // Handles every pending ptrace stop and exit (on SIGCHLD): `on_new(tid)` runs for a new
    // task while it is still stopped, `on_exit(tid)` after a task exited (the workload
    // included: it is a tracee). Neither may throw; an error in on_new leaves the task running.
    void poll(const std::function<void(int tid)>& on_new, const std::function<void(int tid)>& on_exit);

    // Lets every tracee go (idempotent). Waits at most about a second for tracees that do not
    // stop (a long uninterruptible sleep); those are released when perf-prof exits.
    void detach();

private:
    enum class State { Running, Listening, NewUnseen, Stopped };
    void seize(int tid);
    void follow_new(int tid, const std::function<void(int)>& on_new);
    void handle_stop(int tid, int status, const std::function<void(int)>& on_new);
    void forget(int tid);

    std::vector<int> tasks_;
    std::unordered_map<int, State> state_;  // live tracees
};

}  // namespace perfprof::perf
