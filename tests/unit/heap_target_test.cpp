// serve's heap target before any probe: what a client is told about a process that is gone,
// and the idle clock of a target never attached. The probes themselves need root and a real
// process: the e2e tests of serve.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf-prof/error.h"
#include "serve/heap_target.h"

using namespace perfprof;

TEST(HeapTarget, GoneProcessIsAnErrorForTheClient) {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: the pid names no process now
    serve::HeapTarget t(child, serve::HeapSettings{});
    try {
        t.heap_text();
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "heap profile of process " + std::to_string(child) + ": the process is gone");
    }
    EXPECT_FALSE(t.attached());
}

TEST(HeapTarget, NeverAttachedIsNeverIdle) {
    serve::HeapTarget t(::getpid(), serve::HeapSettings{});
    EXPECT_FALSE(t.attached());
    EXPECT_FALSE(t.idle(INT64_MAX));
}
