#include "perf/workload.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "perf-prof/error.h"

namespace perfprof::perf {

namespace {

bool executable(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string command_path(const std::string& cmd) {
    if (cmd.find('/') != std::string::npos) {
        if (executable(cmd)) return cmd;
        int err = ::access(cmd.c_str(), F_OK) == 0 ? EACCES : ENOENT;
        throw Error::sys(err, "cannot run workload '" + cmd + "'");
    }
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(start, end - start);
        std::string full = (dir.empty() ? "." : dir) + "/" + cmd;
        if (executable(full)) return full;
        start = end + 1;
    }
    throw Error("cannot run workload '" + cmd + "': command not found");
}

Workload::Workload(const std::vector<std::string>& argv) : name_(argv.at(0)) {
    command_path(name_);  // checked up front: a typo fails before any event is opened
    int go[2], status[2];
    if (::pipe2(go, O_CLOEXEC) != 0) throw Error::sys(errno, "pipe");
    core::Fd go_r(go[0]), go_w(go[1]);
    if (::pipe2(status, O_CLOEXEC) != 0) throw Error::sys(errno, "pipe");
    core::Fd st_r(status[0]), st_w(status[1]);

    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    pid_ = ::fork();
    if (pid_ < 0) throw Error::sys(errno, "fork");
    if (pid_ == 0) {
        // Child: only async-signal-safe calls until exec.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::prctl(PR_SET_NAME, "perf-exec");
        ::unsetenv("HEAPCHECK");
        // The stop signals stay blocked (as main() blocked them) while the child waits: a
        // SIGINT sent to the whole process group during our start-up (timeout -s INT, Ctrl-C)
        // must not kill the command before its events exist, which would fail the run. It
        // stays pending and ends the command right after the release, while perf-prof, which
        // received it too, stops and writes its outputs.
        // Our copy of the release pipe's write end is closed, so that the read below sees EOF
        // when perf-prof gives up (the stop signal that used to end a waiting child is blocked).
        ::close(go_w.get());
        ::close(st_r.get());
        char c;
        ssize_t n;
        do n = ::read(go_r.get(), &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) ::_exit(127);  // perf-prof gave up before enabling
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execvp(args[0], args.data());
        int err = errno;
        (void)!::write(st_w.get(), &err, sizeof(err));
        ::_exit(127);
    }
    go_ = std::move(go_w);
    status_ = std::move(st_r);
}

void Workload::release() {
    char c = 1;
    if (::write(go_.get(), &c, 1) != 1) throw Error::sys(errno, "cannot release the workload");
    go_.reset();
    int err = 0;
    ssize_t n;
    do n = ::read(status_.get(), &err, sizeof(err));
    while (n < 0 && errno == EINTR);
    status_.reset();
    if (n == sizeof(err)) {
        reap();
        throw Error::sys(err, "cannot run workload '" + name_ + "'");
    }
}

bool Workload::reap() {
    if (exited_ || pid_ <= 0) return exited_;
    int st;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) exited_ = true;
    return exited_;
}

Workload::~Workload() {
    if (pid_ <= 0 || reap()) return;
    go_.reset();  // a child never released exits on EOF
    ::kill(pid_, SIGTERM);
    int st;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace perfprof::perf
