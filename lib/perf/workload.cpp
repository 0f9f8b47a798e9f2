#include "perf/workload.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "perf-prof/error.h"

extern char** environ;

namespace perfprof::perf {

namespace {

// Room for the environment sent with the release, and for entries it adds.
constexpr size_t kEnvBytes = 64 * 1024, kEnvExtra = 16;

// Whether environment entry `e` sets the variable that `def` (NAME=VALUE) sets.
bool same_name(const char* e, const char* def) {
    for (; *def && *def != '='; e++, def++)
        if (*e != *def) return false;
    return *e == '=';
}

// Reads exactly `len` bytes (the child: no allocation). False on EOF or error.
bool read_full(int fd, char* buf, size_t len) {
    while (len) {
        const ssize_t n = ::read(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        buf += n;
        len -= size_t(n);
    }
    return true;
}

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
    args.reserve(argv.size() + 1);
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    size_t nenv = 0;
    while (environ && environ[nenv]) nenv++;
    env_buf_.assign(kEnvBytes, 0);
    envp_.assign(nenv + kEnvExtra + 1, nullptr);

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
        // Ready: perf-prof opens the command's events only after this, so that none of them
        // counts these system calls of ours (a delayed child closed its copies after its events
        // were on: one more close() for multi-trace's syscalls than perf stat saw).
        const char ready = 0;
        (void)!::write(st_w.get(), &ready, 1);
        char c;
        ssize_t n;
        do n = ::read(go_r.get(), &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) ::_exit(127);  // perf-prof gave up before enabling
        // c == 2: the variables to set follow (a length, then NAME=VALUE\0...), into the room
        // made before the fork.
        char** envp = environ;
        uint32_t len = 0;
        if (c == 2) {
            if (!read_full(go_r.get(), reinterpret_cast<char*>(&len), sizeof(len)) || len >= kEnvBytes ||
                !read_full(go_r.get(), env_buf_.data(), len))
                ::_exit(127);
            size_t k = 0;
            for (size_t i = 0; environ && environ[i] && k + kEnvExtra < envp_.size(); i++) {
                bool replaced = false;
                for (size_t off = 0; off < len; off += std::strlen(env_buf_.data() + off) + 1)
                    replaced |= same_name(environ[i], env_buf_.data() + off);
                if (!replaced) envp_[k++] = environ[i];
            }
            for (size_t off = 0; off < len && k + 1 < envp_.size();
                 off += std::strlen(env_buf_.data() + off) + 1)
                envp_[k++] = env_buf_.data() + off;
            envp_[k] = nullptr;
            envp = envp_.data();
        }
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execvpe(args[0], args.data(), envp);
        int err = errno;
        (void)!::write(st_w.get(), &err, sizeof(err));
        ::_exit(127);
    }
    go_ = std::move(go_w);
    status_ = std::move(st_r);
    // The child's ready byte (EOF if it died before it).
    char ready;
    ssize_t r;
    do r = ::read(status_.get(), &ready, 1);
    while (r < 0 && errno == EINTR);
}

bool Workload::set_exec_env(const std::string& name, const std::string& value) {
    if (!go_) return false;  // released
    std::string def = name + "=" + value;
    if (env_.size() + def.size() + 1 >= kEnvBytes) return false;
    env_ += def;
    env_ += '\0';
    return true;
}

void Workload::release() {
    std::string msg(1, env_.empty() ? 1 : 2);
    if (!env_.empty()) {
        const uint32_t len = uint32_t(env_.size());
        msg.append(reinterpret_cast<const char*>(&len), sizeof(len));
        msg += env_;
    }
    for (size_t done = 0; done < msg.size();) {
        const ssize_t n = ::write(go_.get(), msg.data() + done, msg.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error::sys(errno, "cannot release the workload");
        done += size_t(n);
    }
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
