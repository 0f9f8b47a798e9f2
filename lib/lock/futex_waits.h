// lock's core: the contended waits of user-space locks, paired from the futex(2) syscall's
// enter and exit tracepoints, each with the release that ended it.
//
// A wait begins at the sys_enter of a waiting command (WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2,
// WAIT_REQUEUE_PI) and ends at the thread's next sys_exit_futex:
//   ret 0          woken: the lock was handed over; its waker is the last release on the
//                  waited address (or on the address a requeue moved the wait to) that entered
//                  between the wait's enter and its exit, by another thread;
//   -ETIMEDOUT     a wait that timed out: counted, no waker;
//   -EINTR, -ERESTARTSYS, -ERESTART_RESTARTBLOCK
//                  interrupted by a signal (also a thread killed in the wait: exit_group
//                  interrupts it before it dies): counted, no waker;
//   -EAGAIN        the futex word changed before the thread slept: no wait, a retry;
//   other errors   no wait (EINVAL, EFAULT, EDEADLK...).
// Releases are recorded at their sys_enter (WAKE, WAKE_BITSET, WAKE_OP on both addresses,
// UNLOCK_PI, and the requeues REQUEUE, CMP_REQUEUE, CMP_REQUEUE_PI, which wake some waiters and
// move the others to uaddr2). Locks are keyed by (process, address): futexes shared between
// processes have a different address in each and are not paired across them.
//
// Memory is bounded: one entry per thread (a thread's next futex enter ends what it had open;
// past kMaxOpen threads, those not waiting are dropped, then the oldest open waits) and a fixed direct-mapped
// table of the last release per address. Events must come in time order (the plan asks for it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace perfprof::lock {

// futex(2) commands: op & kCmdMask (FUTEX_PRIVATE_FLAG 128, FUTEX_CLOCK_REALTIME 256 masked off).
enum FutexCmd : int {
    kWait = 0,
    kWake = 1,
    kRequeue = 3,
    kCmpRequeue = 4,
    kWakeOp = 5,
    kLockPi = 6,
    kUnlockPi = 7,
    kTrylockPi = 8,
    kWaitBitset = 9,
    kWakeBitset = 10,
    kWaitRequeuePi = 11,
    kCmpRequeuePi = 12,
    kLockPi2 = 13,
};
constexpr int kCmdMask = 0x7f;

enum class Role : uint8_t { Other, Wait, Release, Requeue };
Role role_of(int64_t op);

// One sys_enter_futex, its fields read by name. `stack` is the caller's id of the call chain
// (0: none).
struct Enter {
    uint64_t time = 0;
    uint32_t pid = 0, tid = 0;
    int64_t op = 0;
    uint64_t uaddr = 0, uaddr2 = 0;
    uint32_t stack = 0;
};

enum class End : uint8_t { Woken, TimedOut, Interrupted };

// A wait that blocked, as it ended.
struct Wait {
    uint32_t pid = 0, tid = 0;
    uint64_t uaddr = 0;  // the address waited on
    uint64_t start = 0, end = 0;
    End how = End::Woken;
    uint32_t stack = 0;  // the waiter's, at its enter
    // The release that ended it (how == Woken and one was seen): its thread, its stack, and
    // the address it released (uaddr, or where a requeue moved the wait).
    bool waker_known = false;
    uint32_t waker_tid = 0, waker_stack = 0;
    uint64_t woken_on = 0;

    uint64_t ns() const { return end - start; }
};

class Sink {
public:
    virtual void wait(const Wait& w) noexcept = 0;
    // A wait that did not sleep (-EAGAIN): the word changed between the user-space check and
    // the kernel's.
    virtual void retry(uint32_t pid, uint32_t tid, uint64_t uaddr, uint32_t stack) noexcept = 0;

protected:
    ~Sink() = default;
};

class FutexWaits {
public:
    static constexpr size_t kMaxOpen = size_t(1) << 16;  // open waits kept at most
    static constexpr size_t kSlots = size_t(1) << 14;    // releases remembered (direct-mapped)
    // A release may enter its syscall just before the waiter enters its own and still wake it
    // (the waiter queues itself between): up to this long before the wait's enter, it counts.
    static constexpr uint64_t kRaceNs = 20'000;

    explicit FutexWaits(Sink& sink);

    void enter(const Enter& e) noexcept;
    void exit(uint64_t time, uint32_t tid, int64_t ret) noexcept;
    // Everything open is forgotten (a loss window: what happened in it is unknown).
    void clear() noexcept;

    size_t open() const { return active_; }
    uint64_t errors() const { return errors_; }    // waits that failed otherwise (EINVAL...)
    uint64_t trimmed() const { return trimmed_; }  // open waits dropped by the bound

private:
    struct Open {
        uint64_t start = 0;
        uint64_t uaddr = 0;
        uint32_t pid = 0;
        uint32_t stack = 0;
        bool active = false;
    };
    struct Release {
        uint64_t time = 0;
        uint64_t uaddr = 0;
        uint64_t requeue_to = 0;  // a requeue: where the waits it did not wake went
        uint32_t pid = 0, tid = 0, stack = 0;
        bool used = false;
    };

    static size_t slot_of(uint32_t pid, uint64_t uaddr);
    void record(const Enter& e, uint64_t uaddr, uint64_t requeue_to) noexcept;
    // The release on (pid, uaddr) between `from` and `to`, not by `tid`; null when none.
    const Release* release_on(uint32_t pid, uint64_t uaddr, uint64_t from, uint64_t to, uint32_t tid) const;
    void find_waker(Wait& w) const;
    void trim();

    Sink& sink_;
    std::unordered_map<uint32_t, Open> open_;  // by tid: every thread seen waiting, bounded
    size_t active_ = 0;                        // entries of open_ with a wait open
    std::vector<Release> releases_;            // kSlots
    uint64_t errors_ = 0, trimmed_ = 0;
};

}  // namespace perfprof::lock
