#include "core/work_pool.h"

#include <sched.h>

#include <chrono>
#include <utility>

namespace perfprof::core {

namespace {

constexpr auto kSpin = std::chrono::milliseconds(20);

void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// Spins until `done()` or for kSpin, then waits on `cv` (under `mu`) until `done()`.
template <class Done>
void await(std::mutex& mu, std::condition_variable& cv, Done done) {
    auto start = std::chrono::steady_clock::now();
    for (unsigned i = 1; !done(); ++i) {
        if (i % 1024 == 0 && std::chrono::steady_clock::now() - start > kSpin) {
            std::unique_lock lk(mu);
            cv.wait(lk, done);
            return;
        }
        relax();
    }
}

}  // namespace

unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? static_cast<unsigned>(n) : 1;
}

WorkPool::WorkPool(unsigned threads, const std::function<void()>& warm) {
    try {
        for (unsigned i = 1; i < threads; ++i) threads_.emplace_back([this, warm] { loop(warm); });
    } catch (...) {  // fewer threads than asked: the ones there (and the caller) do the work
    }
}

WorkPool::~WorkPool() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void WorkPool::take(const std::function<void(size_t)>& f, size_t n) {
    for (size_t i; (i = next_.fetch_add(1)) < n;) {
        try {
            f(i);
        } catch (...) {
            std::lock_guard lk(mu_);
            if (!error_) error_ = std::current_exception();
            next_ = n;
        }
    }
}

void WorkPool::loop(const std::function<void()>& warm) {
    if (warm) warm();
    unsigned long seen = 0;
    for (;;) {
        await(mu_, wake_, [&] { return gen_.load() != seen || stop_.load(); });
        const std::function<void(size_t)>* f;
        size_t n;
        {
            std::lock_guard lk(mu_);
            if (stop_) return;
            seen = gen_;
            f = job_, n = n_;
            if (f) ++active_;
        }
        if (!f) continue;  // that job ended before this thread came to it
        take(*f, n);
        {
            std::lock_guard lk(mu_);
            --active_;
        }
        idle_.notify_all();
    }
}

void WorkPool::run(size_t n, const std::function<void(size_t)>& f) {
    if (threads_.empty() || n <= 1) {
        for (size_t i = 0; i < n; ++i) f(i);
        return;
    }
    {
        std::lock_guard lk(mu_);
        job_ = &f, n_ = n;
        next_ = 0;
        error_ = nullptr;
        ++gen_;
    }
    wake_.notify_all();
    take(f, n);
    {
        std::lock_guard lk(mu_);
        job_ = nullptr;  // threads not in it by now stay out
    }
    await(mu_, idle_, [&] { return active_.load() == 0; });
    std::exception_ptr e;
    {
        std::lock_guard lk(mu_);
        e = std::exchange(error_, nullptr);
    }
    if (e) std::rethrow_exception(e);
}

}  // namespace perfprof::core
