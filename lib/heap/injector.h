// Acting on a running process from outside (issue 25, "Running processes" and "Never leave a
// process stopped"): making it load a shared object of ours and call one of its functions
// (the heap agent's attach and detach), stopping all its threads for a memory scan, and the
// guard that continues a process stopped by a signal when perf-prof dies.
//
// Every ptrace tie these classes make belongs to the thread that made it: construct and
// destroy a Freeze in one thread (ptrace detaches a tracer thread's tracees when that thread
// exits). call_in_process does its ptrace work in a short-lived process of its own, so that the
// injection completes and the target is restored even when perf-prof is killed mid-call.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace perfprof::heap {

struct InjectStats {
    uint64_t stopped_ns = 0;  // how long the injected thread was taken from its own code
    uint64_t total_ns = 0;    // the whole call: look-ups, the injector process, the calls
};

// Loads `so_path` into process `pid` with the process's own dlopen (RTLD_NOW | RTLD_LOCAL:
// libc's in glibc >= 2.34, else libdl's when the process has it loaded) unless the process maps
// it already, then calls its exported function `fn` (an `int fn(const char*)`, found in the
// file's ELF symbol table and at the load address the process's maps show) with the
// NUL-terminated `arg`, and returns what it returned.
//
// One thread of the process runs the calls (one waiting in a system call when there is one;
// never one interrupted inside libc or the dynamic loader, whose locks it may hold: such a one
// is single-stepped out of them first); the other
// threads keep running. That thread's registers, its vector state and the system call it was
// in are restored exactly afterwards: an interrupted read or sleep goes on as if nothing
// happened, provided `fn` does not sleep (nanosleep and clock_nanosleep reset the thread's one
// restart block, with which an interrupted sleep resumes its remaining time). Throws Error
// with a one-line reason when the process cannot be injected (gone, statically linked, in
// seccomp's strict mode, traced by a debugger, the file not visible in its mount namespace,
// dlopen failed: dlerror()'s text), when it dies during the call, or when `fn` crashes or does
// not return within `timeout_ms` (default 10 s; the thread is restored then too).
//
// Also dlopen's slip-ups are the process's: a library's constructors run in the chosen thread,
// and the library stays loaded (dlclose is never called).
int call_in_process(int pid, const std::string& so_path, const char* fn, const std::string& arg,
                    InjectStats* st = nullptr);
int call_in_process(int pid, const std::string& so_path, const char* fn, const std::string& arg,
                    InjectStats* st, int timeout_ms);

// Every thread of a process stopped (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal the process can
// see, and the kernel lets the threads go on if perf-prof dies), threads created meanwhile
// included. The destructor lets them go with any signal that arrived meanwhile; a process that
// was stopped (state T) before stays stopped. Throws Error when the process is gone or cannot be
// traced (another tracer, permissions); nothing stays stopped then.
class Freeze {
public:
    explicit Freeze(int pid);
    ~Freeze();
    Freeze(const Freeze&) = delete;
    Freeze& operator=(const Freeze&) = delete;

    // The threads stopped, ascending.
    std::vector<int> tasks() const;

private:
    struct Task {
        int tid;
        int sig;  // a signal that arrived while stopping it: delivered on detach
        bool stopped;
    };
    void seize_all();
    void wait_stops(int64_t deadline_ns);
    void release() noexcept;

    int pid_;
    std::vector<Task> tasks_;
};

// While it lives, `pid` gets SIGCONT if perf-prof dies for any reason, SIGKILL included: a
// small child process waits on a pipe whose only writer is perf-prof; end of file (perf-prof
// gone, every descriptor closed by the kernel) makes it continue `pid` and exit. The child
// ignores the terminal's signals (Ctrl-C reaches the whole process group), so it outlives
// perf-prof's own handling of them. Destruction ends the child without continuing anything.
class ContinueGuard {
public:
    explicit ContinueGuard(int pid);
    ~ContinueGuard();
    ContinueGuard(const ContinueGuard&) = delete;
    ContinueGuard& operator=(const ContinueGuard&) = delete;

    pid_t child() const { return child_; }

private:
    pid_t child_ = -1;
    int fd_ = -1;  // the pipe's write end
};

// In a child of perf-prof: closes every descriptor but `keep`.
void close_other_fds(int keep);

}  // namespace perfprof::heap
