// call_in_process: a function of ours run by a thread of another process (x86-64 Linux).
//
// The thread is taken with PTRACE_SEIZE + PTRACE_INTERRUPT (a stop the process cannot see, no
// SIGSTOP), its registers and vector state saved, and made to call dlopen and then our function
// as if from a signal frame: the arguments' strings are written on its stack below the red zone,
// rsp is aligned as at a call (16n + 8 at entry), and the return address is 0, so the callee's
// `ret` faults at rip 0 and the fault's SIGSEGV stops the thread for us before any handler of the
// process sees it. Then everything is put back and the SIGSEGV suppressed.
//
// System calls: a thread stopped inside a blocking call shows orig_rax = the call and rax = one
// of the kernel's -ERESTART* codes; the kernel decides on the way back to user space whether to
// restart it (rip -= 2) from exactly those two registers. orig_rax = -1 during our calls keeps it
// from "restarting" our function; the saved values, restored while the thread is still inside
// the kernel's signal handling, let it restart the interrupted call as if nothing had happened
// (nanosleep through restart_syscall with its remaining time).
//
// Why one thread and not the whole process: dlopen takes the loader's lock and malloc's arena
// locks. A thread stopped while holding one of them would block our call forever; so the other
// threads run on and release them, and the thread chosen is one blocked in a system call that
// holds none (read, poll, sleeps, futex waits ...), else one interrupted outside libc and the
// loader: one interrupted inside them is single-stepped out (malloc and free are a few hundred
// instructions), never into a system call that may wait. The price: only that thread is
// stopped, for the steps, the dlopen and the function's run (InjectStats::stopped_ns).
//
// Why a process of its own: a tracer killed in the middle of a call leaves its tracee running
// our call with nobody to catch the fault at rip 0: the process would die of it. The injector
// process ignores the terminal's signals and leaves perf-prof's process group, so only a kill of
// its own pid stops it; perf-prof killed, it still restores the thread and exits.
#include "heap/injector.h"

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <syscall.h>
#include <unistd.h>

#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>

#include "core/fd.h"
#include "core/text.h"
#include "core/time.h"
#include "heap/inject_plan.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "sym/object.h"
#include "sym/syms.h"

namespace perfprof::heap {

using core::status_field;
using inject::address_of;
using inject::kDefaultTimeoutMs;
using inject::make_plan;
using inject::Plan;
using inject::read_maps;
using inject::sigmask_has;

namespace {

constexpr int kRedZone = 128;
constexpr int kSafePointTries = 50;              // rounds of interruptions before giving up on a safe point
constexpr int64_t kSafePointNs = 1'000'000'000;  // and the time they may take
constexpr int kMaxSteps = 20000;                 // instructions single-stepped towards one
constexpr int64_t kStepNs = 20'000'000;          // time single-stepping one thread
constexpr int64_t kStepWaitNs = 2'000'000'000;   // one step
constexpr long kRtldNow = 0x2, kRtldLocal = 0;
constexpr uint64_t kEflagsTF = 0x100, kEflagsDF = 0x400;

// ---- the injector process ----------------------------------------------------------------

struct Gone {};  // the thread (the process) exited

void on_alarm(int) {}

// waitpid for `tid` with a deadline (the injector process is single-threaded: SIGALRM without
// SA_RESTART interrupts a blocking waitpid). Returns the status, nullopt at the deadline.
std::optional<int> wait_for(int tid, int64_t deadline_ns) {
    for (;;) {
        const int64_t left = deadline_ns - core::monotonic_now_ns();
        if (left <= 0) {
            int st = 0;
            if (::waitpid(tid, &st, __WALL | WNOHANG) == tid) return st;
            return std::nullopt;
        }
        itimerval t{};
        t.it_value.tv_sec = left / 1'000'000'000;
        t.it_value.tv_usec = std::max<int64_t>(1, (left % 1'000'000'000) / 1000);
        ::setitimer(ITIMER_REAL, &t, nullptr);
        int st = 0;
        const pid_t r = ::waitpid(tid, &st, __WALL);
        const int err = errno;
        itimerval off{};
        ::setitimer(ITIMER_REAL, &off, nullptr);
        if (r == tid) {
            if (WIFEXITED(st) || WIFSIGNALED(st)) throw Gone{};
            return st;
        }
        if (r < 0 && err != EINTR) throw Gone{};  // ECHILD: no longer our tracee
    }
}

bool synchronous(int sig) {
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
}

// System calls a thread can block in while holding no lock of libc or of the loader.
bool waiting_call(long nr) {
    switch (nr) {
        case SYS_read:
        case SYS_write:
        case SYS_readv:
        case SYS_writev:
        case SYS_pread64:
        case SYS_pwrite64:
        case SYS_recvfrom:
        case SYS_recvmsg:
        case SYS_recvmmsg:
        case SYS_sendto:
        case SYS_sendmsg:
        case SYS_accept:
        case SYS_accept4:
        case SYS_connect:
        case SYS_nanosleep:
        case SYS_clock_nanosleep:
        case SYS_poll:
        case SYS_ppoll:
        case SYS_select:
        case SYS_pselect6:
        case SYS_epoll_wait:
        case SYS_epoll_pwait:
        case SYS_epoll_pwait2:
        case SYS_wait4:
        case SYS_waitid:
        case SYS_pause:
        case SYS_rt_sigsuspend:
        case SYS_rt_sigtimedwait:
        case SYS_futex:
        case SYS_msgrcv:
        case SYS_semop:
        case SYS_semtimedop:
        case SYS_io_getevents:
        case SYS_io_uring_enter:
        case SYS_restart_syscall:
            return true;
        default:
            return false;
    }
}

// The system call a thread is blocked in (/proc/PID/task/TID/syscall), -1 when running.
long blocked_call(int pid, int tid) {
    std::string path = "/proc/" + std::to_string(pid);
    path.append("/task/").append(std::to_string(tid)).append("/syscall");
    const std::string s = core::read_file_or_empty(path);
    if (s.empty() || s[0] < '0' || s[0] > '9') return -1;
    return std::strtol(s.c_str(), nullptr, 10);
}

// One thread of the target, seized and stopped; restored and detached by release().
class Thread {
public:
    Thread(const Plan& p, int tid, uint64_t* stopped_ns) : p_(p), tid_(tid), stopped_ns_(stopped_ns) {
        if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
            const int err = errno;
            if (err == ESRCH) throw Gone{};
            const std::string tracer = status_field("/proc/" + std::to_string(tid) + "/status", "TracerPid:");
            throw Error::sys(err, "cannot inject into " + p.who + ": ptrace",
                             tracer.empty() || tracer == "0" ? "" : "it is traced by process " + tracer);
        }
        seized_ = true;
        try {
            stopped();
        } catch (...) {
            release();
            throw;
        }
    }

    ~Thread() { release(); }

    // The vector state, once the thread is where it runs our calls.
    void save_vector_state() {
        xstate_.resize(16384);
        iovec iov{xstate_.data(), xstate_.size()};
        if (::ptrace(PTRACE_GETREGSET, tid_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov) == 0) {
            xstate_.resize(iov.iov_len);
        } else {
            xstate_.resize(sizeof(user_fpregs_struct));
            if (::ptrace(PTRACE_GETFPREGS, tid_, nullptr, xstate_.data()) != 0) throw Gone{};
            fpregs_only_ = true;
        }
    }

    // Whether the thread can run our calls now: blocked in a call that holds no lock, or
    // interrupted outside libc and the loader.
    bool safe_point() const {
        if (int64_t(saved_.orig_rax) >= 0) return waiting_call(long(saved_.orig_rax));
        for (const auto& [lo, hi] : p_.unsafe_text)
            if (saved_.rip >= lo && saved_.rip < hi) return false;
        return true;
    }

    // Lets the thread run on one instruction at a time until it is at a safe point (out of
    // malloc or the loader, which take a few hundred instructions), at most `max_steps`.
    bool step_to_safe_point(int max_steps) {
        const int64_t budget = core::monotonic_now_ns() + kStepNs;
        for (int i = 0; i < max_steps && core::monotonic_now_ns() < budget; i++) {
            if (safe_point()) return true;
            // Never a step into a system call that may wait (read, a futex): a thread taken
            // back from one would find the step's SIGTRAP pending after we let it go. At the
            // `syscall` of such a call the thread holds no lock of its own code's: a safe point.
            unsigned char insn[2] = {};
            if (::pread(mem().get(), insn, 2, off_t(saved_.rip)) == 2 && insn[0] == 0x0f && insn[1] == 0x05)
                if (waiting_call(long(saved_.rax))) return true;
            if (::ptrace(PTRACE_SINGLESTEP, tid_, nullptr, nullptr) != 0) throw Gone{};
            // One instruction: late only when the machine is loaded, or in a short system call.
            std::optional<int> st = wait_for(tid_, core::monotonic_now_ns() + kStepWaitNs);
            if (!st) {
                take_back_from_step();
                return false;
            }
            if ((*st >> 16) == 0 && WSTOPSIG(*st) != SIGTRAP) defer(WSTOPSIG(*st));
            if (::ptrace(PTRACE_GETREGS, tid_, nullptr, &saved_) != 0) throw Gone{};
        }
        return safe_point();
    }

    // A step that did not end (a system call that waits after all): the thread interrupted, and
    // the step's SIGTRAP, queued when the call returns, taken before we let it go.
    void take_back_from_step() {
        ::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr);
        const std::string status =
            "/proc/" + std::to_string(p_.pid) + "/task/" + std::to_string(tid_) + "/status";
        for (int i = 0; i < 4; i++) {
            std::optional<int> st = wait_for(tid_, core::monotonic_now_ns() + kStepWaitNs);
            if (!st) throw Gone{};
            if ((*st >> 16) == 0 && WSTOPSIG(*st) == SIGTRAP) break;  // the step's: suppressed
            if ((*st >> 16) == 0) defer(WSTOPSIG(*st));
            if (!sigmask_has(status_field(status, "SigPnd:"), SIGTRAP)) break;
            if (::ptrace(PTRACE_CONT, tid_, nullptr, nullptr) != 0) throw Gone{};
        }
        if (::ptrace(PTRACE_GETREGS, tid_, nullptr, &saved_) != 0) throw Gone{};
    }

    // Calls `fn` with `str` (copied on the stack; its address in rdi) or `rdi`, and `rsi`;
    // returns rax.
    uint64_t call(uint64_t fn, const std::string* str, uint64_t rdi, uint64_t rsi, const char* what) {
        uint64_t sp = saved_.rsp - kRedZone;
        if (str) {
            sp -= str->size() + 1;
            poke(sp, str->c_str(), str->size() + 1);
            rdi = sp;
        }
        sp &= ~uint64_t(15);
        sp -= 8;
        const uint64_t zero = 0;
        poke(sp, &zero, sizeof zero);
        user_regs_struct r = saved_;
        r.rip = fn;
        r.rsp = sp;
        r.rdi = rdi;
        r.rsi = rsi;
        r.rax = 0;
        r.orig_rax = uint64_t(-1);
        r.eflags &= ~(kEflagsTF | kEflagsDF);
        if (::ptrace(PTRACE_SETREGS, tid_, nullptr, &r) != 0) throw Gone{};
        modified_ = true;
        const int64_t deadline = core::monotonic_now_ns() + int64_t(p_.timeout_ms) * 1'000'000;
        int sig = 0;
        for (;;) {
            if (::ptrace(PTRACE_CONT, tid_, nullptr, reinterpret_cast<void*>(long(sig))) != 0) throw Gone{};
            sig = 0;
            std::optional<int> st = wait_for(tid_, deadline);
            if (!st) {
                ::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr);
                std::optional<int> again = wait_for(tid_, core::monotonic_now_ns() + 2'000'000'000);
                if (!again) throw Gone{};
                if ((*again >> 16) == 0) defer(WSTOPSIG(*again));  // a signal that came first
                throw Error("cannot inject into " + p_.who + ": " + what + " did not return within " +
                            std::to_string(p_.timeout_ms) + " ms (thread " + std::to_string(tid_) +
                            " restored; a lock it took may stay taken)");
            }
            if ((*st >> 16) != 0) continue;  // an interrupt or a group stop: go on with the call
            const int s = WSTOPSIG(*st);
            if (synchronous(s)) {
                user_regs_struct now;
                if (::ptrace(PTRACE_GETREGS, tid_, nullptr, &now) != 0) throw Gone{};
                if (s == SIGSEGV && now.rip == 0) return now.rax;
                siginfo_t si{};
                if (::ptrace(PTRACE_GETSIGINFO, tid_, nullptr, &si) == 0 && si.si_code > 0) {
                    char buf[160];
                    std::snprintf(buf, sizeof buf, ": %s crashed (%s at 0x%llx; thread %d restored)", what,
                                  strsignal(s), static_cast<unsigned long long>(now.rip), tid_);
                    throw Error("cannot inject into " + p_.who + buf);
                }
            }
            // Any other signal waits until the thread is back in its own code.
            defer(s);
        }
    }

    std::string peek_string(uint64_t addr, size_t max) {
        std::string s(max, '\0');
        const ssize_t n = ::pread(mem().get(), s.data(), max, off_t(addr));
        s.resize(n > 0 ? size_t(n) : 0);
        s.resize(std::min(s.size(), s.find('\0')));
        return s;
    }

    // Puts the registers back and lets the thread go with the signals it received meanwhile
    // (the first as it came, the others sent again: their senders' details are lost).
    void release() noexcept {
        if (!seized_) return;
        seized_ = false;
        if (modified_) {
            ::ptrace(PTRACE_SETREGS, tid_, nullptr, &saved_);
            if (fpregs_only_) {
                ::ptrace(PTRACE_SETFPREGS, tid_, nullptr, xstate_.data());
            } else {
                iovec iov{xstate_.data(), xstate_.size()};
                ::ptrace(PTRACE_SETREGSET, tid_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov);
            }
        }
        const int first = deferred_.empty() ? 0 : deferred_.front();
        ::ptrace(PTRACE_DETACH, tid_, nullptr, reinterpret_cast<void*>(long(first)));
        if (stopped_ns_) *stopped_ns_ += uint64_t(core::monotonic_now_ns() - stop_start_);
        for (size_t i = 1; i < deferred_.size(); i++) ::syscall(SYS_tgkill, p_.pid, tid_, deferred_[i]);
    }

private:
    // The first stop, and the state saved.
    void stopped() {
        stop_start_ = core::monotonic_now_ns();
        if (::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) != 0) throw Gone{};
        // The first stop: the interrupt, or a signal on its way (delivered when we let go).
        std::optional<int> st = wait_for(tid_, stop_start_ + 2'000'000'000);
        if (!st)
            throw Error("cannot inject into " + p_.who + ": thread " + std::to_string(tid_) +
                        " does not stop (uninterruptible sleep?)");
        if ((*st >> 16) == 0) defer(WSTOPSIG(*st));
        if (::ptrace(PTRACE_GETREGS, tid_, nullptr, &saved_) != 0) throw Gone{};
    }

    void defer(int sig) {
        if (std::find(deferred_.begin(), deferred_.end(), sig) == deferred_.end()) deferred_.push_back(sig);
    }

    const core::Fd& mem() {
        if (!mem_) {
            mem_ = core::Fd(::open(("/proc/" + std::to_string(p_.pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC));
            if (!mem_) throw Error::sys(errno, "cannot inject into " + p_.who + ": /proc/PID/mem");
        }
        return mem_;
    }

    void poke(uint64_t addr, const void* data, size_t n) {
        if (::pwrite(mem().get(), data, n, off_t(addr)) != ssize_t(n))
            throw Error::sys(errno, "cannot inject into " + p_.who + ": writing its stack");
    }

    const Plan& p_;
    int tid_;
    uint64_t* stopped_ns_;
    bool seized_ = false, modified_ = false, fpregs_only_ = false;
    int64_t stop_start_ = 0;
    user_regs_struct saved_{};
    std::vector<unsigned char> xstate_;
    std::vector<int> deferred_;
    core::Fd mem_;
};

// The threads to try, best first: blocked in a waiting call (the main thread first), then the
// others; none that blocks SIGSEGV (the call's end would kill the process).
std::vector<int> candidates(int pid) {
    std::vector<int> waiting, others;
    for (int tid : perf::tasks_of(pid)) {
        const std::string task = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
        if (!perf::task_alive(tid) || sigmask_has(status_field(task + "/status", "SigBlk:"), SIGSEGV))
            continue;
        (waiting_call(blocked_call(pid, tid)) ? waiting : others).push_back(tid);
    }
    for (auto* v : {&waiting, &others})
        std::stable_partition(v->begin(), v->end(), [pid](int t) { return t == pid; });
    waiting.insert(waiting.end(), others.begin(), others.end());
    return waiting;
}

int inject(const Plan& p, const std::string& arg, uint64_t* stopped_ns) {
    std::optional<Thread> t;
    const int64_t give_up = core::monotonic_now_ns() + kSafePointNs;
    for (int round = 0; round < kSafePointTries && !t && core::monotonic_now_ns() < give_up; round++) {
        const std::vector<int> tids = candidates(p.pid);
        if (tids.empty()) {
            if (!perf::task_alive(p.pid)) throw Gone{};
            throw Error("cannot inject into " + p.who + ": every thread blocks SIGSEGV");
        }
        for (int tid : tids) {
            if (core::monotonic_now_ns() > give_up) break;
            try {
                t.emplace(p, tid, stopped_ns);
            } catch (const Gone&) {
                t.reset();
                continue;  // that thread exited: another one
            }
            if (t->safe_point() || t->step_to_safe_point(kMaxSteps)) break;
            t.reset();
        }
        if (!t) ::usleep(1000);
    }
    if (!t)
        throw Error("cannot inject into " + p.who + ": its threads were inside libc or the dynamic loader " +
                    "whenever interrupted (" + std::to_string(kSafePointNs / 1'000'000) + " ms)");
    t->save_vector_state();
    uint64_t fn = p.fn_addr;
    if (!fn) {
        const uint64_t handle = t->call(p.dlopen, &p.so.path, 0, kRtldNow | kRtldLocal, "dlopen");
        if (!handle) {
            std::string why = "dlopen failed";
            if (p.dlerror)
                if (uint64_t msg = t->call(p.dlerror, nullptr, 0, 0, "dlerror"))
                    why = t->peek_string(msg, 512);
            throw Error("cannot load " + p.so.path + " into " + p.who + ": " + why);
        }
        fn = address_of(read_maps(p.pid), p.so, p.fn_offset);
        if (!fn) throw Error("cannot inject into " + p.who + ": " + p.so.path + " is loaded but not mapped");
    }
    return int(uint32_t(t->call(fn, &arg, 0, 0, p.fn.c_str())));
}

// What the injector process tells perf-prof.
struct Reply {
    int32_t ok = 0;
    int32_t value = 0;
    uint64_t stopped_ns = 0;
    char error[1024] = {};
};

[[noreturn]] void injector_process(const Plan& p, const std::string& arg, int out) {
    close_other_fds(out);
    ::setpgid(0, 0);  // out of perf-prof's process group: the terminal's signals miss it
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
        ::signal(s, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = on_alarm;  // no SA_RESTART: the alarm interrupts waitpid
    ::sigaction(SIGALRM, &sa, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    Reply r;
    try {
        r.value = inject(p, arg, &r.stopped_ns);
        r.ok = 1;
    } catch (const Gone&) {
        std::snprintf(r.error, sizeof r.error, "cannot inject into %s: it exited", p.who.c_str());
    } catch (const std::exception& e) {
        std::snprintf(r.error, sizeof r.error, "%s", e.what());
    } catch (...) {
        std::snprintf(r.error, sizeof r.error, "cannot inject into %s", p.who.c_str());
    }
    const char* b = reinterpret_cast<const char*>(&r);
    for (size_t done = 0; done < sizeof r;) {
        const ssize_t n = ::write(out, b + done, sizeof r - done);
        if (n <= 0 && errno != EINTR) break;  // perf-prof is gone: nothing to tell
        if (n > 0) done += size_t(n);
    }
    ::_exit(0);
}

}  // namespace

int call_in_process(int pid, const std::string& so_path, const char* fn, const std::string& arg,
                    InjectStats* st) {
    return call_in_process(pid, so_path, fn, arg, st, kDefaultTimeoutMs);
}

int call_in_process(int pid, const std::string& so_path, const char* fn, const std::string& arg,
                    InjectStats* st, int timeout_ms) {
    const int64_t t0 = core::monotonic_now_ns();
    const Plan p = make_plan(pid, so_path, fn, timeout_ms);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error::sys(errno, "cannot inject into " + p.who + ": pipe");
    core::Fd in(fds[0]), out(fds[1]);
    const pid_t child = ::fork();
    if (child < 0) throw Error::sys(errno, "cannot inject into " + p.who + ": fork");
    if (child == 0) injector_process(p, arg, out.get());
    out = core::Fd();
    Reply r;
    size_t got = 0;
    char* b = reinterpret_cast<char*>(&r);
    while (got < sizeof r) {
        const ssize_t n = ::read(in.get(), b + got, sizeof r - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += size_t(n);
    }
    // Another reaper (the task follower's waitpid(-1)) may have taken it already: ECHILD.
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (st) {
        st->stopped_ns = r.stopped_ns;
        st->total_ns = uint64_t(core::monotonic_now_ns() - t0);
    }
    if (got != sizeof r) throw Error("cannot inject into " + p.who + ": the injector process died");
    if (!r.ok) throw Error(std::string(r.error, strnlen(r.error, sizeof r.error)));
    return r.value;
}

}  // namespace perfprof::heap
