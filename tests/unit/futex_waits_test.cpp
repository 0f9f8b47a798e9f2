// lock's core (lock/futex_waits, lock_report, stack_ids): the pairing of futex enters and exits
// into waits with their wakers, fed synthetic events in time order: woken waits, timeouts,
// signals, EAGAIN, requeues, a thread's own wake, exits mid-wait, loss windows and the bounds;
// then the report's rows and text, and the stack ids.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lock/futex_waits.h"
#include "lock/lock_report.h"
#include "lock/stack_ids.h"

namespace perfprof::lock {
namespace {

constexpr int64_t kPrivate = 128;
constexpr uint64_t A = 0x1000, B = 0x2000;
constexpr uint32_t kPid = 100;

struct Recorder final : Sink {
    std::vector<Wait> waits;
    struct Retry {
        uint32_t pid, tid;
        uint64_t uaddr;
    };
    std::vector<Retry> retries;
    void wait(const Wait& w) noexcept override { waits.push_back(w); }
    void retry(uint32_t pid, uint32_t tid, uint64_t uaddr, uint32_t) noexcept override {
        retries.push_back({pid, tid, uaddr});
    }
};

struct Fixture {
    Recorder rec;
    FutexWaits fw{rec};

    void op(uint64_t t, uint32_t tid, int64_t op, uint64_t uaddr, uint64_t uaddr2 = 0, uint32_t stack = 0,
            uint32_t pid = kPid) {
        Enter e;
        e.time = t;
        e.pid = pid;
        e.tid = tid;
        e.op = op;
        e.uaddr = uaddr;
        e.uaddr2 = uaddr2;
        e.stack = stack;
        fw.enter(e);
    }
    void wait(uint64_t t, uint32_t tid, uint64_t uaddr, uint32_t stack = 0, uint32_t pid = kPid) {
        op(t, tid, kWait | kPrivate, uaddr, 0, stack, pid);
    }
    void wake(uint64_t t, uint32_t tid, uint64_t uaddr, uint32_t stack = 0, uint32_t pid = kPid) {
        op(t, tid, kWake | kPrivate, uaddr, 0, stack, pid);
        fw.exit(t + 1, tid, 1);
    }
};

TEST(FutexWaits, RolesOfTheCommands) {
    EXPECT_EQ(role_of(kWait), Role::Wait);
    EXPECT_EQ(role_of(kWaitBitset | kPrivate | 256), Role::Wait);  // CLOCK_REALTIME masked off
    EXPECT_EQ(role_of(kLockPi | kPrivate), Role::Wait);
    EXPECT_EQ(role_of(kLockPi2), Role::Wait);
    EXPECT_EQ(role_of(kWaitRequeuePi), Role::Wait);
    EXPECT_EQ(role_of(kWake | kPrivate), Role::Release);
    EXPECT_EQ(role_of(kWakeBitset), Role::Release);
    EXPECT_EQ(role_of(kWakeOp), Role::Release);
    EXPECT_EQ(role_of(kUnlockPi), Role::Release);
    EXPECT_EQ(role_of(kCmpRequeue), Role::Requeue);
    EXPECT_EQ(role_of(kRequeue), Role::Requeue);
    EXPECT_EQ(role_of(kCmpRequeuePi), Role::Requeue);
    EXPECT_EQ(role_of(kTrylockPi), Role::Other);
    EXPECT_EQ(role_of(-1), Role::Other);
}

TEST(FutexWaits, AWokenWaitNamesTheLastReleaseOnItsAddress) {
    Fixture f;
    f.wait(1000, 2, A, 7);
    f.wake(1500, 3, B, 9);  // another lock
    f.wake(2000, 1, A, 8);
    f.fw.exit(2100, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 1u);
    const Wait& w = f.rec.waits[0];
    EXPECT_EQ(w.how, End::Woken);
    EXPECT_EQ(w.pid, kPid);
    EXPECT_EQ(w.tid, 2u);
    EXPECT_EQ(w.uaddr, A);
    EXPECT_EQ(w.ns(), 1100u);
    EXPECT_EQ(w.stack, 7u);
    ASSERT_TRUE(w.waker_known);
    EXPECT_EQ(w.waker_tid, 1u);
    EXPECT_EQ(w.waker_stack, 8u);
    EXPECT_EQ(w.woken_on, A);
    EXPECT_EQ(f.fw.open(), 0u);
}

TEST(FutexWaits, TimeoutsAndSignalsAreWaitsWithoutWaker) {
    Fixture f;
    f.wait(1000, 2, A);
    f.wake(1500, 1, A);  // a release in the window does not make a timed-out wait woken
    f.fw.exit(3000, 2, -110);
    f.wait(4000, 2, A);
    f.fw.exit(4500, 2, -4);  // EINTR
    f.wait(5000, 2, A);
    f.fw.exit(5200, 2, -512);  // ERESTARTSYS, as sys_exit sees a signal (or a kill) in the wait
    f.wait(6000, 2, A);
    f.fw.exit(6300, 2, -516);  // ERESTART_RESTARTBLOCK: a timed wait interrupted
    ASSERT_EQ(f.rec.waits.size(), 4u);
    EXPECT_EQ(f.rec.waits[0].how, End::TimedOut);
    EXPECT_EQ(f.rec.waits[0].ns(), 2000u);
    for (size_t i = 1; i < 4; i++) EXPECT_EQ(f.rec.waits[i].how, End::Interrupted) << i;
    for (const Wait& w : f.rec.waits) EXPECT_FALSE(w.waker_known);
}

TEST(FutexWaits, EagainIsARetryNotAWait) {
    Fixture f;
    f.wait(1000, 2, A);
    f.fw.exit(1010, 2, -11);
    EXPECT_TRUE(f.rec.waits.empty());
    ASSERT_EQ(f.rec.retries.size(), 1u);
    EXPECT_EQ(f.rec.retries[0].tid, 2u);
    EXPECT_EQ(f.rec.retries[0].uaddr, A);
    f.wait(2000, 2, A);
    f.fw.exit(2010, 2, -22);  // EINVAL: no wait, no retry
    EXPECT_TRUE(f.rec.waits.empty());
    EXPECT_EQ(f.rec.retries.size(), 1u);
    EXPECT_EQ(f.fw.errors(), 1u);
}

TEST(FutexWaits, RequeuedWaitNamesTheReleaseOnTheNewAddress) {
    Fixture f;
    f.wait(1000, 2, A, 7);
    f.op(1500, 1, kCmpRequeue | kPrivate, A, B, 5);  // wakes 1, moves the rest to B
    f.fw.exit(1501, 1, 1);
    f.wake(1800, 3, B, 6);
    f.fw.exit(2000, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 1u);
    const Wait& w = f.rec.waits[0];
    ASSERT_TRUE(w.waker_known);
    EXPECT_EQ(w.waker_tid, 3u);
    EXPECT_EQ(w.waker_stack, 6u);
    EXPECT_EQ(w.woken_on, B);
    EXPECT_EQ(w.uaddr, A);  // the lock is still the one it waited on
}

TEST(FutexWaits, ARequeueWithoutALaterReleaseWokeTheWaitItself) {
    Fixture f;
    f.wake(900, 3, B);  // before the requeue: not what woke it
    f.wait(1000, 2, A);
    f.op(1500, 1, kRequeue, A, B, 5);
    f.fw.exit(1600, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 1u);
    ASSERT_TRUE(f.rec.waits[0].waker_known);
    EXPECT_EQ(f.rec.waits[0].waker_tid, 1u);
    EXPECT_EQ(f.rec.waits[0].woken_on, A);
}

TEST(FutexWaits, PiLocksAndPiCondvars) {
    Fixture f;
    f.op(1000, 2, kLockPi | kPrivate, A);  // blocks on a PI mutex
    f.op(1400, 1, kUnlockPi | kPrivate, A, 0, 4);
    f.fw.exit(1401, 1, 0);
    f.fw.exit(1500, 2, 0);
    // A PI condition variable: wait on A to be requeued to the PI mutex B.
    f.op(2000, 2, kWaitRequeuePi | kPrivate, A, B);
    f.op(2500, 1, kCmpRequeuePi | kPrivate, A, B);
    f.fw.exit(2501, 1, 1);
    f.op(2800, 3, kUnlockPi | kPrivate, B, 0, 6);
    f.fw.exit(2801, 3, 0);
    f.fw.exit(3000, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 2u);
    EXPECT_EQ(f.rec.waits[0].waker_tid, 1u);
    EXPECT_EQ(f.rec.waits[0].waker_stack, 4u);
    ASSERT_TRUE(f.rec.waits[1].waker_known);
    EXPECT_EQ(f.rec.waits[1].waker_tid, 3u);
    EXPECT_EQ(f.rec.waits[1].woken_on, B);
    EXPECT_EQ(f.rec.waits[1].ns(), 1000u);
}

TEST(FutexWaits, AThreadsTableKeepsOneEntryPerThread) {
    Fixture f;
    for (int i = 0; i < 1000; i++) {
        f.wait(uint64_t(i) * 10, 2, A);
        f.fw.exit(uint64_t(i) * 10 + 5, 2, -11);
    }
    EXPECT_EQ(f.fw.open(), 0u);
    EXPECT_EQ(f.rec.retries.size(), 1000u);
    f.wait(20000, 2, A);
    f.wait(20001, 3, A);
    EXPECT_EQ(f.fw.open(), 2u);
}

TEST(FutexWaits, WakeOpReleasesBothAddresses) {
    Fixture f;
    f.wait(1000, 2, B);
    f.op(1500, 1, kWakeOp | kPrivate, A, B);
    f.fw.exit(1600, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 1u);
    EXPECT_TRUE(f.rec.waits[0].waker_known);
    EXPECT_EQ(f.rec.waits[0].waker_tid, 1u);
}

TEST(FutexWaits, NoWakerFromItsOwnThreadAnotherProcessOrLongBefore) {
    Fixture f;
    f.wake(990, 2, A);  // the waiter's own wake, just before its wait
    f.wait(1000, 2, A);
    f.fw.exit(2000, 2, 0);
    f.wake(3000, 1, A);  // long before the next wait
    f.wait(1'000'000, 2, A);
    f.wake(1'000'500, 5, A, 0, kPid + 1);  // the same address in another process
    f.fw.exit(1'001'000, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 2u);
    EXPECT_FALSE(f.rec.waits[0].waker_known);
    EXPECT_FALSE(f.rec.waits[1].waker_known);
    EXPECT_EQ(f.rec.waits[1].how, End::Woken);
}

TEST(FutexWaits, AReleaseJustBeforeTheWaitEnteredStillWakesIt) {
    Fixture f;
    f.wake(995, 1, A);  // entered 5 us before the waiter: it queued itself in between
    f.wait(5995, 2, A);
    f.fw.exit(7000, 2, 0);
    ASSERT_EQ(f.rec.waits.size(), 1u);
    EXPECT_TRUE(f.rec.waits[0].waker_known);
}

TEST(FutexWaits, AThreadExitingMidWaitLeavesNothingOpen) {
    Fixture f;
    f.wait(1000, 2, A);
    f.wait(1000, 4, A);
    EXPECT_EQ(f.fw.open(), 2u);
    f.fw.exit(1500, 2, -512);  // exit_group interrupts the wait before the thread dies
    EXPECT_EQ(f.fw.open(), 1u);
    // Thread 4's exit was never seen; its tid comes back in a new thread's first futex call.
    f.wake(9000, 4, B);
    EXPECT_EQ(f.fw.open(), 0u);
    ASSERT_EQ(f.rec.waits.size(), 1u);
    EXPECT_EQ(f.rec.waits[0].how, End::Interrupted);
    f.fw.exit(9500, 4, 0);  // a stray exit: nothing open
    EXPECT_EQ(f.rec.waits.size(), 1u);
}

TEST(FutexWaits, ALossForgetsWaitsAndReleases) {
    Fixture f;
    f.wait(1000, 2, A);
    f.wake(1500, 1, A);
    f.fw.clear();
    EXPECT_EQ(f.fw.open(), 0u);
    f.fw.exit(1600, 2, 0);
    EXPECT_TRUE(f.rec.waits.empty());
    f.wait(2000, 2, A);
    f.fw.exit(2100, 2, 0);  // the release before the loss is forgotten too
    ASSERT_EQ(f.rec.waits.size(), 1u);
    EXPECT_FALSE(f.rec.waits[0].waker_known);
}

TEST(FutexWaits, OpenWaitsAreBounded) {
    Fixture f;
    const auto n = uint32_t(FutexWaits::kMaxOpen + 100);
    for (uint32_t tid = 1; tid <= n; tid++) f.wait(tid, tid, A);
    EXPECT_LE(f.fw.open(), FutexWaits::kMaxOpen);
    EXPECT_GT(f.fw.trimmed(), 0u);
    f.fw.exit(n + 10, n, 0);  // the newest are kept
    EXPECT_EQ(f.rec.waits.size(), 1u);
}

// ---- the report ----

Wait wait_of(uint64_t uaddr, uint64_t len, uint32_t stack, uint32_t waker_stack, uint32_t waker_tid = 1) {
    Wait w;
    w.pid = kPid;
    w.tid = 2;
    w.uaddr = uaddr;
    w.start = 1000;
    w.end = 1000 + len;
    w.stack = stack;
    w.waker_known = waker_stack != 0;
    w.waker_stack = waker_stack;
    w.waker_tid = waker_tid;
    return w;
}

TEST(LockReport, SumsPerLockAndPerWaitingStackWithItsHolders) {
    LockReport r(true);
    for (int i = 0; i < 10; i++) r.add(wait_of(A, 5000, 1, 2), 5000);
    r.add(wait_of(A, 1000, 1, 3, 7), 1000);
    Wait t = wait_of(B, 300, 4, 0);
    t.how = End::TimedOut;
    r.add(t, 300);
    r.retry(kPid, B, 4);
    const LockReport::Row* a = r.lock_row(kPid, A);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->dist.calls, 11u);
    EXPECT_EQ(a->dist.total, 51000u);
    EXPECT_EQ(a->dist.max, 5000u);
    const LockReport::Row* b = r.lock_row(kPid, B);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->timedout, 1u);
    EXPECT_EQ(b->retries, 1u);
    const LockReport::Row* s = r.stack_row(kPid, 1);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->holders.size(), 2u);
    EXPECT_EQ(s->holders[0].stack, 2u);
    EXPECT_EQ(s->holders[0].waits, 10u);
    EXPECT_EQ(s->holders[1].tid, 7u);

    std::string out;
    LockReport::Names names{
        [](uint32_t) { return std::string_view("prog"); },
        [](uint32_t, uint32_t id, std::string& o) { o += "    frame" + std::to_string(id) + "\n"; }};
    r.render("WALL", "us", names, out);
    EXPECT_NE(out.find("0x0000000000001000 100     prog                   11        0        0        0"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("51.000"), std::string::npos) << out;
    EXPECT_LT(out.find("0x0000000000001000"), out.find("0x0000000000002000")) << out;  // by total
    EXPECT_NE(out.find("[1] 11 waits  total 51.000"), std::string::npos) << out;
    EXPECT_NE(out.find("    frame1\n  released by 1 prog: 10 waits  total 50.000 us\n      frame2\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("no futex release seen"), std::string::npos) << out;
    EXPECT_TRUE(r.empty());  // printed rows are cleared
    out.clear();
    r.render("WALL", "us", names, out);
    EXPECT_EQ(out, "");
}

TEST(LockReport, WithoutStacksOnlyTheLockTable) {
    LockReport r(false);
    r.add(wait_of(A, 5000, 0, 0), 5000);
    EXPECT_EQ(r.stack_row(kPid, 0), nullptr);
    std::string out;
    r.render("WALL", "us", {[](uint32_t) { return std::string_view("p"); }, nullptr}, out);
    EXPECT_EQ(out.find("waiting stacks"), std::string::npos);
    EXPECT_NE(out.find("5.000"), std::string::npos);
}

TEST(StackIds, SameChainSameIdPerProcess) {
    StackIds ids;
    const uint64_t c1[] = {1, 2, 3}, c2[] = {1, 2, 4};
    bool fresh = false;
    const uint32_t a = ids.intern(10, c1, 3, &fresh);
    EXPECT_TRUE(fresh);
    EXPECT_EQ(ids.intern(10, c1, 3, &fresh), a);
    EXPECT_FALSE(fresh);
    const uint32_t b = ids.intern(10, c2, 3);
    const uint32_t c = ids.intern(11, c1, 3);
    EXPECT_NE(a, b);
    EXPECT_NE(a, c);
    EXPECT_EQ(ids.intern(10, c1, 0), 0u);
    EXPECT_EQ(ids.pid(c), 11u);
    ASSERT_EQ(ids.ips(b).size(), 3u);
    EXPECT_EQ(ids.ips(b)[2], 4u);
    EXPECT_TRUE(ids.valid(a));
    EXPECT_FALSE(ids.valid(0));
}

}  // namespace
}  // namespace perfprof::lock
