// One thread's event loop: epoll over tagged fds, periodic timers (timerfd), the stop signals
// through a signalfd, and a "stopping" flag that ends run(). The session's loop and serve's
// share it; nothing in it is perf-specific.
#pragma once

#include <sys/epoll.h>
#include <sys/signalfd.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <unordered_map>
#include <vector>

#include "core/fd.h"

namespace perfprof::core {

class EventLoop {
public:
    using Handler = std::function<void(uint32_t events)>;  // the epoll events that fired
    using SignalHandler = std::function<void(const signalfd_siginfo&)>;

    EventLoop();  // throws Error when epoll cannot be created
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Calls `h` when `fd` is ready; throws Error when epoll refuses the fd.
    void add(int fd, Handler h, uint32_t events = EPOLLIN);
    // The same, false where epoll refuses the fd (regular files, /dev/null).
    bool try_add(int fd, Handler h, uint32_t events = EPOLLIN);
    // Stops watching `fd` (before it is closed); safe from within its own handler.
    void remove(int fd);

    // Calls `fn` every `period_ms` from now; the timer is the loop's.
    void add_timer(uint64_t period_ms, std::function<void()> fn);

    // Blocks `signals` for this thread and delivers them through a signalfd, one call of `fn`
    // per signal. Blocked at once: one that arrives before run() waits for it.
    void watch_signals(std::initializer_list<int> signals, SignalHandler fn);

    // Waits and dispatches until stop(). `before_wait` (optional) runs before every wait and
    // returns its timeout in ms (-1: none); `after_wake` (optional) runs after every wake-up,
    // timeouts included. Handlers of one wake-up after a stop() are not called.
    struct Hooks {
        std::function<int()> before_wait;
        std::function<void()> after_wake;
    };
    void run(const Hooks& hooks = {});

    void stop() { stopping_ = true; }
    bool stopping() const { return stopping_; }

private:
    struct Entry {
        int fd = -1;
        Handler handler;
        bool active = false;
    };
    bool register_fd(int fd, Handler h, uint32_t events);

    Fd epoll_;
    std::deque<Entry> entries_;  // by id: a handler adding an fd keeps the others in place
    std::unordered_map<int, size_t> by_fd_;
    std::vector<size_t> free_;   // reusable ids
    std::vector<size_t> freed_;  // removed during this wake-up: reusable after it
    std::vector<Fd> owned_;      // timers and the signalfd
    bool stopping_ = false;
};

}  // namespace perfprof::core
