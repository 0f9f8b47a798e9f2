// Freeze (every thread of a process held with ptrace) and ContinueGuard (SIGCONT for a stopped
// process when perf-prof dies): the two ways perf-prof stops a process without any way of
// leaving it stopped.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "core/time.h"
#include "heap/injector.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"

namespace perfprof::heap {

namespace {

constexpr int64_t kStopWaitNs = 2'000'000'000;  // a thread in an uninterruptible sleep

}  // namespace

// In a child of perf-prof: every descriptor closed but `keep` (other guards' pipes, perf-prof's
// stdout), so that no end of file waits for this child.
void close_other_fds(int keep) {
    if (keep > 0) ::syscall(SYS_close_range, 0u, unsigned(keep - 1), 0u);
    ::syscall(SYS_close_range, unsigned(keep + 1), ~0u, 0u);
}

Freeze::Freeze(int pid) : pid_(pid) {
    try {
        // Threads created while we seize the others: read the list again until it holds
        // nothing new, each time after every thread seized so far has stopped (a stopped
        // thread creates none).
        for (;;) {
            const size_t before = tasks_.size();
            seize_all();
            wait_stops(core::monotonic_now_ns() + kStopWaitNs);
            if (tasks_.size() == before) break;
        }
        if (tasks_.empty()) throw Error("cannot stop process " + std::to_string(pid) + ": no such process");
    } catch (...) {
        release();
        throw;
    }
}

Freeze::~Freeze() {
    release();
}

std::vector<int> Freeze::tasks() const {
    std::vector<int> t;
    for (const Task& k : tasks_)
        if (k.stopped) t.push_back(k.tid);
    std::sort(t.begin(), t.end());
    return t;
}

void Freeze::seize_all() {
    for (int tid : perf::tasks_of(pid_)) {
        if (std::any_of(tasks_.begin(), tasks_.end(), [tid](const Task& k) { return k.tid == tid; }))
            continue;
        if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
            const int err = errno;
            if (err == ESRCH) continue;  // exited meanwhile
            throw Error::sys(err,
                             "cannot stop process " + std::to_string(pid_) + " (thread " +
                                 std::to_string(tid) + ") with ptrace",
                             err == EPERM ? "another tracer (a debugger, strace) holds it, or "
                                            "kernel.yama.ptrace_scope forbids it"
                                          : "");
        }
        tasks_.push_back({tid, 0, false});
        ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
    }
}

// Every seized thread's first stop: the interrupt (a group stop is reported the same way), or a
// signal on its way, which it gets back on release. Threads gone meanwhile are forgotten.
void Freeze::wait_stops(int64_t deadline_ns) {
    for (;;) {
        bool waiting = false;
        for (size_t i = 0; i < tasks_.size(); i++) {
            Task& k = tasks_[i];
            if (k.stopped) continue;
            int st = 0;
            const pid_t r = ::waitpid(k.tid, &st, __WALL | WNOHANG);
            if (r == k.tid && WIFSTOPPED(st)) {
                k.stopped = true;
                if ((st >> 16) == 0) k.sig = WSTOPSIG(st);
            } else if ((r == k.tid) || (r < 0 && errno == ECHILD)) {
                tasks_.erase(tasks_.begin() + long(i--));  // exited
            } else {
                waiting = true;
            }
        }
        if (!waiting) return;
        if (core::monotonic_now_ns() > deadline_ns)
            throw Error("cannot stop process " + std::to_string(pid_) +
                        ": a thread does not stop (uninterruptible sleep?)");
        ::usleep(50);
    }
}

void Freeze::release() noexcept {
    // A thread that has not stopped yet cannot be detached: wait for its stop a while (the
    // interrupt is pending), else the kernel lets it go when this thread of perf-prof exits.
    const int64_t deadline = core::monotonic_now_ns() + kStopWaitNs;
    for (Task& k : tasks_) {
        while (!k.stopped) {
            int st = 0;
            const pid_t r = ::waitpid(k.tid, &st, __WALL | WNOHANG);
            if (r == k.tid && WIFSTOPPED(st)) {
                k.stopped = true;
                if ((st >> 16) == 0) k.sig = WSTOPSIG(st);
            } else if (r == k.tid || (r < 0 && errno != EINTR) || core::monotonic_now_ns() > deadline) {
                break;
            } else {
                ::usleep(50);
            }
        }
        if (k.stopped) ::ptrace(PTRACE_DETACH, k.tid, nullptr, reinterpret_cast<void*>(long(k.sig)));
    }
    tasks_.clear();
}

ContinueGuard::ContinueGuard(int pid) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error::sys(errno, "cannot guard process " + std::to_string(pid));
    child_ = ::fork();
    if (child_ < 0) {
        const int err = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        throw Error::sys(err, "cannot guard process " + std::to_string(pid) + ": fork");
    }
    if (child_ == 0) {
        // Only async-signal-safe calls from here: perf-prof may have other threads.
        close_other_fds(fds[0]);
        for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
            ::signal(s, SIG_IGN);
        ::prctl(PR_SET_NAME, "perf-prof-guard", 0, 0, 0);
        // perf-prof gone between fork and here: its write end is closed already, read sees EOF.
        char c = 0;
        ssize_t n;
        do {
            n = ::read(fds[0], &c, 1);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) ::kill(pid, SIGCONT);  // end of file: perf-prof is gone
        ::_exit(0);
    }
    ::close(fds[0]);
    fd_ = fds[1];
}

ContinueGuard::~ContinueGuard() {
    if (fd_ < 0) return;
    const char quit = 'q';
    ssize_t n;
    do {
        n = ::write(fd_, &quit, 1);
    } while (n < 0 && errno == EINTR);
    ::close(fd_);
    // Another reaper (the task follower's waitpid(-1)) may have taken it already: ECHILD.
    while (::waitpid(child_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace perfprof::heap
