// heap::agent_unusable: why the allocator agent cannot profile a command or a running process,
// on real workloads beside this test binary (build/unit_tests → build/workloads/): a dynamic
// program (usable), one linked statically, one defining malloc itself, one calling an
// allocator's prefixed entry (je_malloc), and a process in another mount namespace.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "heap/allocator.h"
#include "perf-prof/error.h"
#include "shell.h"

using namespace perfprof::heap;
namespace fs = std::filesystem;

namespace {

// The real path, as the process's /proc entries name it (the sanitizer build's workloads are a
// symlink).
std::string workload(const std::string& name) {
    std::string p =
        fs::weakly_canonical(fs::path(perfprof::test::self_exe()).parent_path() / "workloads" / name).string();
    EXPECT_TRUE(fs::exists(p)) << p << " missing: `make all` builds it";
    return p;
}

// Whether thread `pid` is blocked in read(2) (system call 0 on x86-64, 63 on arm64).
bool in_read(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
    std::string nr;
    in >> nr;
#if defined(__aarch64__)
    return nr == "63";
#else
    return nr == "0";
#endif
}

// A workload started with `args`, blocked reading its stdin (a pipe we hold) until destroyed.
class Waiting {
public:
    explicit Waiting(const std::string& path, const std::string& arg = "") {
        int p[2];
        if (::pipe(p) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(p[0], 0);
            ::close(p[1]);
            if (arg.empty())
                ::execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
            else
                ::execl(path.c_str(), path.c_str(), "1", "1", "1", arg.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(p[0]);
        in_ = p[1];
        for (int i = 0; i < 5000 && !in_read(pid_); i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~Waiting() {
        ::close(in_);
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    int pid() const { return pid_; }

private:
    int pid_ = -1, in_ = -1;
};

}  // namespace

TEST(AgentUnusable, DynamicProgramIsUsable) {
    const std::string leaks = workload("leaks");
    EXPECT_EQ(agent_unusable(leaks), "");
    Waiting w(leaks, "wait");
    ASSERT_TRUE(in_read(w.pid()));
    EXPECT_EQ(agent_unusable(w.pid()), "");
}

TEST(AgentUnusable, StaticProgram) {
    const std::string path = workload("leaks_static");
    EXPECT_NE(agent_unusable(path).find("leaks_static is statically linked"), std::string::npos)
        << agent_unusable(path);
    Waiting w(path, "wait");
    ASSERT_TRUE(in_read(w.pid()));
    const std::string why = agent_unusable(w.pid());
    EXPECT_EQ(why.rfind(path + " is statically linked", 0), 0u) << why;
}

TEST(AgentUnusable, AllocatorInTheExecutable) {
    const std::string path = workload("own_malloc");
    EXPECT_NE(agent_unusable(path).find("own_malloc defines malloc itself"), std::string::npos)
        << agent_unusable(path);
    Waiting w(path);
    ASSERT_TRUE(in_read(w.pid()));
    EXPECT_NE(agent_unusable(w.pid()).find("own_malloc defines malloc itself"), std::string::npos)
        << agent_unusable(w.pid());
}

TEST(AgentUnusable, PrefixedAllocatorEntry) {
    const std::string path = workload("je_user");
    EXPECT_NE(agent_unusable(path).find("je_user calls je_malloc"), std::string::npos)
        << agent_unusable(path);
    Waiting w(path);
    ASSERT_TRUE(in_read(w.pid()));
    EXPECT_NE(agent_unusable(w.pid()).find("je_user calls je_malloc"), std::string::npos)
        << agent_unusable(w.pid());
}

TEST(AgentUnusable, AnotherMountNamespace) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        char ok = ::unshare(CLONE_NEWNS) == 0 ? 'y' : 'n';
        if (::write(ready[1], &ok, 1) != 1) ::_exit(1);
        ::pause();
        ::_exit(0);
    }
    ::close(ready[1]);
    char ok = 0;
    ASSERT_EQ(::read(ready[0], &ok, 1), 1);
    ::close(ready[0]);
    std::string why;
    if (ok == 'y') why = agent_unusable(child);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    if (ok != 'y') GTEST_SKIP() << "unshare(CLONE_NEWNS) needs CAP_SYS_ADMIN";
    EXPECT_NE(why.find("is in another mount namespace"), std::string::npos) << why;
}

TEST(AgentUnusable, ProcessGoneIsAnError) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    EXPECT_THROW(agent_unusable(int(child)), perfprof::Error);
}
