#include "core/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>

#include "core/fd.h"

using perfprof::core::EventLoop;
using perfprof::core::Fd;

namespace {

struct Pipe {
    Fd r, w;
    Pipe() {
        int p[2];
        EXPECT_EQ(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        r.reset(p[0]);
        w.reset(p[1]);
    }
};

}  // namespace

TEST(EventLoop, TimersFireUntilStopped) {
    EventLoop loop;
    int fast = 0, slow = 0;
    loop.add_timer(5, [&] {
        if (++fast == 6) loop.stop();
    });
    loop.add_timer(1000, [&] { ++slow; });
    loop.run();
    EXPECT_EQ(fast, 6);
    EXPECT_EQ(slow, 0);
    EXPECT_TRUE(loop.stopping());
}

TEST(EventLoop, CallsTheHandlerOfAReadyFd) {
    EventLoop loop;
    Pipe a, b;
    std::string got;
    loop.add(a.r.get(), [&](uint32_t events) {
        EXPECT_TRUE(events & EPOLLIN);
        char c;
        while (::read(a.r.get(), &c, 1) == 1) got += c;
        loop.stop();
    });
    loop.add(b.r.get(), [&](uint32_t) { ADD_FAILURE() << "b is never written"; });
    ASSERT_EQ(::write(a.w.get(), "xy", 2), 2);
    loop.run();
    EXPECT_EQ(got, "xy");
}

TEST(EventLoop, AHandlerMayRemoveItsFdAndAddAnother) {
    EventLoop loop;
    Pipe a, b;
    int a_calls = 0;
    loop.add(a.r.get(), [&](uint32_t) {
        ++a_calls;
        loop.remove(a.r.get());
        loop.add(b.r.get(), [&](uint32_t) { loop.stop(); });
        ASSERT_EQ(::write(b.w.get(), "b", 1), 1);
    });
    ASSERT_EQ(::write(a.w.get(), "a", 1), 1);  // left unread: level-triggered, it would fire again
    loop.run();
    EXPECT_EQ(a_calls, 1);
}

TEST(EventLoop, HooksRunAroundEveryWait) {
    EventLoop loop;
    int waits = 0, wakes = 0;
    EventLoop::Hooks h;
    h.before_wait = [&] {
        ++waits;
        return 1;  // ms: wakes on the timeout alone
    };
    h.after_wake = [&] {
        if (++wakes == 3) loop.stop();
    };
    loop.run(h);
    EXPECT_EQ(waits, 3);
    EXPECT_EQ(wakes, 3);
}

TEST(EventLoop, TryAddRefusesWhatEpollCannotWatch) {
    EventLoop loop;
    Fd file(::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(file);
    EXPECT_FALSE(loop.try_add(file.get(), [](uint32_t) {}));
    EXPECT_THROW(loop.add(file.get(), [](uint32_t) {}), std::exception);
}

TEST(EventLoop, ASignalStopsIt) {
    EventLoop loop;
    int signo = 0;
    loop.watch_signals({SIGUSR2}, [&](const signalfd_siginfo& si) {
        signo = int(si.ssi_signo);
        loop.stop();
    });
    // Blocked now: sent before run(), it waits in the signalfd.
    ASSERT_EQ(::pthread_kill(::pthread_self(), SIGUSR2), 0);
    loop.run();
    EXPECT_EQ(signo, SIGUSR2);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}
