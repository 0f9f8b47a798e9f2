// A few threads for one batch of index-parallel jobs (`--symbols`). Started once, they spin
// for a while between jobs before they sleep: on VMs a sleeping CPU can take milliseconds to
// wake, longer than a whole job here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace perfprof::core {

class WorkPool {
public:
    // `threads`: how many run a job, the caller included (1: no threads at all). `warm` runs
    // once on each new thread before its first job.
    explicit WorkPool(unsigned threads, const std::function<void()>& warm = {});
    ~WorkPool();
    WorkPool(const WorkPool&) = delete;
    WorkPool& operator=(const WorkPool&) = delete;

    unsigned size() const { return static_cast<unsigned>(threads_.size()) + 1; }

    // f(0) .. f(n - 1), each once, on the pool's threads and the calling one; returns when all
    // have ended. The first exception thrown stops further picks and is rethrown here.
    void run(size_t n, const std::function<void(size_t)>& f);

private:
    void loop(const std::function<void()>& warm);
    void take(const std::function<void(size_t)>& f, size_t n);

    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable wake_, idle_;
    std::atomic<unsigned long> gen_{0};  // bumped for each job
    std::atomic<bool> stop_{false};
    std::atomic<unsigned> active_{0};  // threads inside the current job (changed under mu_)
    const std::function<void(size_t)>* job_ = nullptr;
    size_t n_ = 0;
    std::atomic<size_t> next_{0};
    std::exception_ptr error_;
};

// How many CPUs this process may run on (its affinity mask), at least 1.
unsigned usable_cpus();

}  // namespace perfprof::core
