#include "core/work_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using perfprof::core::WorkPool;

TEST(WorkPool, RunsEachIndexOnceOverManyJobs) {
    for (unsigned threads : {1u, 2u, 4u}) {
        WorkPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        for (size_t n : {0u, 1u, 2u, 7u, 1000u}) {
            std::vector<std::atomic<int>> hits(n);
            pool.run(n, [&](size_t i) { ++hits[i]; });
            for (size_t i = 0; i < n; ++i)
                EXPECT_EQ(hits[i].load(), 1) << threads << " threads, job of " << n;
        }
    }
}

TEST(WorkPool, WorkIsSharedBetweenThreads) {
    WorkPool pool(2);
    std::mutex mu;
    std::set<std::thread::id> ids;
    // Each item waits until two threads have joined in (or gives up after a while), so one
    // thread alone cannot take them all before the other starts.
    std::atomic<int> in{0};
    pool.run(2, [&](size_t) {
        ++in;
        for (int i = 0; i < 2000 && in.load() < 2; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::lock_guard lk(mu);
        ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ids.size(), 2u);
}

TEST(WorkPool, FirstExceptionIsRethrownAndThePoolStaysUsable) {
    WorkPool pool(2, [] {});
    EXPECT_THROW(pool.run(100,
                          [](size_t i) {
                              if (i == 37) throw std::runtime_error("item 37");
                          }),
                 std::runtime_error);
    std::atomic<size_t> sum{0};
    pool.run(10, [&](size_t i) { sum += i; });
    EXPECT_EQ(sum.load(), 45u);
}

TEST(WorkPool, WarmRunsOnEachNewThread) {
    std::atomic<int> warmed{0};
    {
        WorkPool pool(3, [&] { ++warmed; });
        pool.run(64, [](size_t) {});
    }  // joined: every thread has started and warmed
    EXPECT_EQ(warmed.load(), 2);
}
