#include "core/event_loop.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "perf-prof/error.h"

namespace perfprof::core {

namespace {

Fd make_timer(uint64_t period_ms) {
    Fd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!fd) throw Error::sys(errno, "timerfd_create");
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(period_ms / 1000);
    its.it_value.tv_nsec = static_cast<long>((period_ms % 1000) * 1000000);
    its.it_interval = its.it_value;
    if (::timerfd_settime(fd.get(), 0, &its, nullptr) != 0) throw Error::sys(errno, "timerfd_settime");
    return fd;
}

void consume_timer(int fd) {
    uint64_t n;
    while (::read(fd, &n, sizeof(n)) < 0 && errno == EINTR) {
    }
}

}  // namespace

EventLoop::EventLoop() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll_) throw Error::sys(errno, "epoll_create1");
}

bool EventLoop::register_fd(int fd, Handler h, uint32_t events) {
    size_t id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else {
        id = entries_.size();
        entries_.emplace_back();
    }
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
        free_.push_back(id);
        return false;
    }
    entries_[id] = Entry{fd, std::move(h), true};
    by_fd_[fd] = id;
    return true;
}

void EventLoop::add(int fd, Handler h, uint32_t events) {
    if (!register_fd(fd, std::move(h), events)) throw Error::sys(errno, "epoll_ctl");
}

bool EventLoop::try_add(int fd, Handler h, uint32_t events) {
    return register_fd(fd, std::move(h), events);
}

void EventLoop::remove(int fd) {
    auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) return;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    // The handler may be the one running: it is destroyed after the wake-up.
    entries_[it->second].active = false;
    freed_.push_back(it->second);
    by_fd_.erase(it);
}

void EventLoop::add_timer(uint64_t period_ms, std::function<void()> fn) {
    Fd fd = make_timer(period_ms);
    const int raw = fd.get();
    owned_.push_back(std::move(fd));
    add(raw, [raw, fn = std::move(fn)](uint32_t) {
        consume_timer(raw);
        fn();
    });
}

void EventLoop::watch_signals(std::initializer_list<int> signals, SignalHandler fn) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : signals) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throw Error::sys(errno, "sigprocmask");
    Fd fd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!fd) throw Error::sys(errno, "signalfd");
    const int raw = fd.get();
    owned_.push_back(std::move(fd));
    add(raw, [raw, fn = std::move(fn)](uint32_t) {
        signalfd_siginfo si;
        while (::read(raw, &si, sizeof(si)) == sizeof(si)) fn(si);
    });
}

void EventLoop::run(const Hooks& hooks) {
    epoll_event evs[64];
    while (!stopping_) {
        const int timeout = hooks.before_wait ? hooks.before_wait() : -1;
        const int n = ::epoll_wait(epoll_.get(), evs, 64, timeout);
        if (n < 0 && errno != EINTR) throw Error::sys(errno, "epoll_wait");
        for (int i = 0; i < n && !stopping_; i++) {
            Entry& e = entries_[evs[i].data.u64];
            if (e.active) e.handler(evs[i].events);
        }
        if (hooks.after_wake) hooks.after_wake();
        for (size_t id : freed_) {
            entries_[id].handler = nullptr;
            free_.push_back(id);
        }
        freed_.clear();
    }
}

}  // namespace perfprof::core
