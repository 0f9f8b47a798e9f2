// lib/perf/task_follower: ptrace-following the tasks a process creates (SPEC §3.10) on real
// processes: a new thread is reported while it is still stopped, signals reach the tracee,
// and detaching leaves nothing attached. Needs ptrace rights over our own children (root in
// CI; Yama's scope 1 allows it for children too).
#include "perf/task_follower.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "perf-prof/error.h"

namespace perfprof::perf {
namespace {

int tracer_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("TracerPid:", 0) == 0) return std::stoi(line.substr(10));
    return -1;
}

int report_fd = -1;

void* thread_main(void*) {
    const long tid = syscall(SYS_gettid);
    (void)!write(report_fd, &tid, sizeof(tid));
    return nullptr;
}

// The child: waits for a byte, starts one thread (which writes its tid), joins it, raises
// SIGUSR1 at itself (handled), writes "done" and waits for another byte before exiting.
pid_t start_child(int go_fd, int report) {
    const pid_t pid = fork();
    if (pid == 0) {
        report_fd = report;
        static volatile sig_atomic_t got = 0;
        signal(SIGUSR1, [](int) { got = 1; });
        char c;
        if (read(go_fd, &c, 1) != 1) _exit(3);
        pthread_t t;
        pthread_create(&t, nullptr, thread_main, nullptr);
        pthread_join(t, nullptr);
        raise(SIGUSR1);
        const long done = got ? -1 : -2;
        (void)!write(report, &done, sizeof(done));
        if (read(go_fd, &c, 1) != 1) _exit(4);
        _exit(0);
    }
    return pid;
}

bool readable(int fd) {
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0;
}

TEST(TaskFollower, NewThreadIsReportedBeforeItRunsAndSignalsGoThrough) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    int go[2], rep[2];
    ASSERT_EQ(pipe(go), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, rep), 0);
    const pid_t child = start_child(go[0], rep[1]);
    ASSERT_GT(child, 0);
    {
        TaskFollower f({child});
        EXPECT_EQ(tracer_of(child), getpid());
        ASSERT_EQ(write(go[1], "g", 1), 1);
        std::vector<int> fresh;
        bool ran_before_reported = false;
        long reported = 0, done = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done && std::chrono::steady_clock::now() < deadline) {
            f.poll(
                [&](int tid) {
                    // The thread is stopped: it cannot have written its tid yet.
                    ran_before_reported |= readable(rep[0]);
                    fresh.push_back(tid);
                },
                [](int) {});
            long v;
            while (recv(rep[0], &v, sizeof(v), MSG_DONTWAIT) == sizeof(v)) (v > 0 ? reported : done) = v;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ASSERT_EQ(fresh.size(), 1u);
        EXPECT_EQ(fresh[0], reported);
        EXPECT_FALSE(ran_before_reported);
        EXPECT_EQ(done, -1) << "SIGUSR1 was not re-injected";
        EXPECT_EQ(f.tasks(), (std::vector<int>{child, fresh[0]}));
    }
    // Destroyed: detached, and the child runs on to its end.
    EXPECT_EQ(tracer_of(child), 0);
    ASSERT_EQ(write(go[1], "g", 1), 1);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    for (int fd : {go[0], go[1], rep[0], rep[1]}) close(fd);
}

TEST(TaskFollower, ASeizeFailureLetsTheOthersGo) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    int go[2], rep[2];
    ASSERT_EQ(pipe(go), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, rep), 0);
    const pid_t child = start_child(go[0], rep[1]);
    try {
        TaskFollower f({child, 2147483646});
        ADD_FAILURE() << "no error for a thread that does not exist";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot follow thread 2147483646: it has exited"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(tracer_of(child), 0);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    for (int fd : {go[0], go[1], rep[0], rep[1]}) close(fd);
}

}  // namespace
}  // namespace perfprof::perf
