// One CPU profile of one target for serve: a child process, forked from serve's single thread,
// runs an ordinary session (the cpu-clock at a fixed period, stacks, the session's handling of
// threads created and the target's exit) and writes the profile to a pipe when it is stopped
// (SIGINT at the deadline) or the target has exited. A client that goes away kills the child,
// and the kernel frees its events with it. The child keeps no state of serve's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/fd.h"

namespace perfprof::serve {

enum class CpuFormat {
    Gperftools,  // /pprof/profile: gperftools' binary CPU profile, then the target's maps
    Proto,       // /debug/pprof/profile: gzip profile.proto, symbolized, with labels
};

// What the child samples.
enum class ProfileKind {
    Cpu,    // the cpu-clock at a fixed period (CpuFormat says how it is written)
    Block,  // Go's block profile: every wait off the CPU (serve/wait_samplers)
    Mutex,  // Go's mutex profile: contended futex waits by releasing stack
};

struct ProfileRequest {
    ProfileKind kind = ProfileKind::Cpu;
    int pid = 0;
    uint64_t seconds = 30;
    uint64_t freq = 100;       // samples per second of CPU time, on each thread
    uint32_t dwarf_stack = 0;  // --call-graph dwarf: user stack bytes copied per sample
    CpuFormat format = CpuFormat::Proto;
};

class ProfileJob {
public:
    // Forks the child. Throws Error when it cannot.
    explicit ProfileJob(const ProfileRequest& r);
    ~ProfileJob();  // a child still running is killed and reaped
    ProfileJob(const ProfileJob&) = delete;
    ProfileJob& operator=(const ProfileJob&) = delete;

    const ProfileRequest& request() const { return r_; }
    // Readable while the child writes, and at its end: call pump() then.
    int fd() const { return data_.get(); }
    // Reads what is there; true once the child is done (its output complete and it is reaped).
    bool pump();
    // Monotonic time at which stop() is due.
    int64_t deadline_ns() const { return deadline_ns_; }
    // The time is up: the child stops sampling and writes its profile.
    void stop();
    bool stopped() const { return stopped_; }

    // After pump() returned true.
    struct Result {
        bool ok = false;   // a profile came back
        std::string body;  // the profile
        std::string note;  // why it is short or missing: the target exited, the child's error
    };
    Result result();

private:
    ProfileRequest r_;
    pid_t child_ = -1;
    core::Fd data_, messages_;  // the profile (pipe), what the child said (a memfd)
    std::string body_;
    int64_t start_ns_ = 0, deadline_ns_ = 0, end_ns_ = 0;
    bool stopped_ = false, eof_ = false;
    int status_ = 0;
};

}  // namespace perfprof::serve
