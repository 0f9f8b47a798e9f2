#include "perf/task_follower.h"

#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/fd.h"
#include "core/time.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"

namespace perfprof::perf {

namespace {

constexpr long kOptions = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
constexpr int64_t kDetachWaitNs = 1'000'000'000;

bool stopping_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void resume(int tid, int sig) {
    // ESRCH: killed meanwhile (SIGKILL needs no tracer); its exit comes through waitpid.
    ::ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
}

}  // namespace

TaskFollower::TaskFollower(const std::vector<int>& tids, const std::vector<int>& pids) {
    try {
        for (int tid : tids) seize(tid);
        for (int pid : pids) {
            // Threads created while we seize the others: read the list again until it holds
            // nothing new. Seized threads report their own clones from then on.
            for (bool more = true; more;) {
                more = false;
                for (int tid : tasks_of(pid))
                    if (!state_.count(tid)) {
                        seize(tid);
                        more = true;
                    }
            }
            if (!state_.count(pid))
                throw Error("cannot follow process " + std::to_string(pid) + ": it has exited");
        }
    } catch (...) {
        detach();
        throw;
    }
}

TaskFollower::~TaskFollower() {
    detach();
}

void TaskFollower::seize(int tid) {
    if (::ptrace(PTRACE_SEIZE, tid, nullptr, reinterpret_cast<void*>(kOptions)) != 0) {
        const int err = errno;
        if (err == ESRCH) throw Error("cannot follow thread " + std::to_string(tid) + ": it has exited");
        throw Error::sys(err, "cannot follow thread " + std::to_string(tid) + " with ptrace",
                         err == EPERM
                             ? "another tracer (a debugger, strace) holds it, it is a kernel thread, "
                               "or kernel.yama.ptrace_scope forbids it"
                             : "");
    }
    tasks_.push_back(tid);
    state_[tid] = State::Running;
}

void TaskFollower::follow_new(int tid, const std::function<void(int)>& on_new) {
    tasks_.push_back(tid);
    state_[tid] = State::NewUnseen;
    on_new(tid);
}

void TaskFollower::forget(int tid) {
    state_.erase(tid);
}

void TaskFollower::poll(const std::function<void(int)>& on_new, const std::function<void(int)>& on_exit) {
    for (;;) {
        int status = 0;
        const pid_t tid = ::waitpid(-1, &status, __WALL | WNOHANG);
        if (tid <= 0) {
            if (tid < 0 && errno == EINTR) continue;
            return;  // 0: nothing pending; ECHILD: no tracee left
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            forget(tid);
            on_exit(tid);
        } else if (WIFSTOPPED(status)) {
            handle_stop(tid, status, on_new);
        }
    }
}

void TaskFollower::handle_stop(int tid, int status, const std::function<void(int)>& on_new) {
    const int sig = WSTOPSIG(status), event = status >> 16;
    auto it = state_.find(tid);
    if (it == state_.end()) {
        // A new task's first stop, reported before its creator's clone event.
        follow_new(tid, on_new);
        state_[tid] = State::Running;
        resume(tid, 0);
        return;
    }
    switch (event) {
        case PTRACE_EVENT_CLONE:
        case PTRACE_EVENT_FORK:
        case PTRACE_EVENT_VFORK: {
            unsigned long child = 0;
            if (::ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child) == 0 && child && !state_.count(int(child)))
                follow_new(int(child), on_new);
            resume(tid, 0);
            return;
        }
        case PTRACE_EVENT_STOP:
            if (it->second == State::NewUnseen || !stopping_signal(sig)) {
                // A new task's initial stop (its events are open by now), or an interrupt.
                it->second = State::Running;
                resume(tid, 0);
            } else {
                // Group stop (SIGSTOP, SIGTSTP, ...): it stays stopped until SIGCONT, which
                // PTRACE_LISTEN lets through without resuming it here.
                it->second = State::Listening;
                ::ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
            }
            return;
        case 0:
            // Signal-delivery stop: the signal goes on to the task.
            it->second = State::Running;
            resume(tid, sig);
            return;
        default:
            resume(tid, 0);
            return;
    }
}

void TaskFollower::detach() {
    if (state_.empty()) return;
    for (const auto& [tid, st] : state_) ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
    const int64_t deadline = core::monotonic_now_ns() + kDetachWaitNs;
    while (!state_.empty() && core::monotonic_now_ns() < deadline) {
        bool any = false;
        std::vector<int> tids;
        for (const auto& [tid, st] : state_) tids.push_back(tid);
        for (int tid : tids) {
            int status = 0;
            const pid_t r = ::waitpid(tid, &status, __WALL | WNOHANG);
            if (r == 0) continue;
            any = true;
            state_.erase(tid);
            if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) continue;
            const int sig = WSTOPSIG(status), event = status >> 16;
            if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
                // Created while we let go: it is a tracee too and stops once; let it go as well.
                unsigned long child = 0;
                if (::ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child) == 0 && child)
                    state_.emplace(int(child), State::NewUnseen);
            }
            // A signal-delivery stop hands its signal over with the detach; any other stop
            // (the interrupt, a group stop, a new task's first stop) has none to give.
            ::ptrace(PTRACE_DETACH, tid, nullptr,
                     reinterpret_cast<void*>(static_cast<long>(event == 0 ? sig : 0)));
        }
        if (!any) ::usleep(1000);
    }
    // Still running (a long D sleep): released by the kernel when perf-prof exits.
    state_.clear();
}

}  // namespace perfprof::perf
