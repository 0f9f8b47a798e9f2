// The command perf-prof launches (SPEC §1.6): forked before any event is opened, blocked on
// a pipe until every event is enabled, then released to exec.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/fd.h"

namespace perfprof::perf {

// What execvp would run for `cmd` (a path, or a name searched in PATH). Throws Error when
// there is none or it cannot be executed.
std::string command_path(const std::string& cmd);

class Workload {
public:
    // Forks; the child renames itself perf-exec, dies with us, and waits. Throws Error when
    // argv[0] cannot be found or executed.
    explicit Workload(const std::vector<std::string>& argv);
    ~Workload();  // a workload still running is sent SIGTERM and reaped
    Workload(const Workload&) = delete;
    Workload& operator=(const Workload&) = delete;

    pid_t pid() const { return pid_; }
    // Sets NAME=VALUE in the environment the command is exec'd with (replacing the inherited
    // one); false once released (or when the room for it is full). The text goes to the
    // waiting child with the release: it allocates nothing.
    bool set_exec_env(const std::string& name, const std::string& value);
    // Lets the child exec; throws Error when the exec fails.
    void release();
    // Reaps the child if it exited (non-blocking). True once it has exited.
    bool reap();
    bool exited() const { return exited_; }
    // Reaped by someone else (the task follower, whose tracee it is).
    void set_exited() { exited_ = true; }

private:
    pid_t pid_ = -1;
    bool exited_ = false;
    std::string name_;
    core::Fd go_;      // write end: one byte releases the child
    core::Fd status_;  // read end: errno of a failed exec, EOF after a successful one
    std::string env_;  // NAME=VALUE\0... sent with the release (set_exec_env)
    // The child's room, sized before the fork: the environment received, and the pointers of
    // the environment it execs with.
    std::vector<char> env_buf_;
    std::vector<char*> envp_;
};

}  // namespace perfprof::perf
