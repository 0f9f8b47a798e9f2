#include "lock/futex_waits.h"

#include <algorithm>

namespace perfprof::lock {

namespace {

constexpr int64_t kEintr = -4, kEagain = -11, kEtimedout = -110;
constexpr int64_t kErestartsys = -512, kErestartnointr = -513, kErestartnohand = -514, kErestartBlock = -516;

}  // namespace

Role role_of(int64_t op) {
    switch (int(op & kCmdMask)) {
        case kWait:
        case kWaitBitset:
        case kLockPi:
        case kLockPi2:
        case kWaitRequeuePi:
            return Role::Wait;
        case kWake:
        case kWakeBitset:
        case kWakeOp:
        case kUnlockPi:
            return Role::Release;
        case kRequeue:
        case kCmpRequeue:
        case kCmpRequeuePi:
            return Role::Requeue;
        default:
            return Role::Other;  // TRYLOCK_PI, FD, unknown
    }
}

FutexWaits::FutexWaits(Sink& sink) : sink_(sink), releases_(kSlots) {}

size_t FutexWaits::slot_of(uint32_t pid, uint64_t uaddr) {
    uint64_t h = (uaddr >> 2) ^ (uint64_t(pid) << 32);
    h *= 0x9e3779b97f4a7c15ull;
    return size_t(h >> 50) & (kSlots - 1);
}

void FutexWaits::record(const Enter& e, uint64_t uaddr, uint64_t requeue_to) noexcept {
    Release& r = releases_[slot_of(e.pid, uaddr)];
    r.time = e.time;
    r.uaddr = uaddr;
    r.requeue_to = requeue_to;
    r.pid = e.pid;
    r.tid = e.tid;
    r.stack = e.stack;
    r.used = true;
}

void FutexWaits::enter(const Enter& e) noexcept {
    // A thread is in one syscall at a time: whatever it had open ended (its exit was lost).
    // Entries stay in the table when closed: no allocation per wait, one node per thread.
    auto it = open_.find(e.tid);
    const Role role = role_of(e.op);
    if (role == Role::Wait) {
        if (it == open_.end()) {
            if (open_.size() >= kMaxOpen) trim();
            it = open_.emplace(e.tid, Open{}).first;
        }
        if (!it->second.active) active_++;
        it->second = Open{e.time, e.uaddr, e.pid, e.stack, true};
        return;
    }
    if (it != open_.end() && it->second.active) {
        it->second.active = false;
        active_--;
    }
    switch (role) {
        case Role::Release:
            record(e, e.uaddr, 0);
            if (int(e.op & kCmdMask) == kWakeOp) record(e, e.uaddr2, 0);
            break;
        case Role::Requeue:
            record(e, e.uaddr, e.uaddr2);
            break;
        default:
            break;
    }
}

const FutexWaits::Release* FutexWaits::release_on(uint32_t pid, uint64_t uaddr, uint64_t from, uint64_t to,
                                                  uint32_t tid) const {
    const Release& r = releases_[slot_of(pid, uaddr)];
    if (!r.used || r.pid != pid || r.uaddr != uaddr || r.tid == tid) return nullptr;
    if (r.time > to || r.time + kRaceNs < from) return nullptr;
    return &r;
}

void FutexWaits::find_waker(Wait& w) const {
    const Release* r = release_on(w.pid, w.uaddr, w.start, w.end, w.tid);
    uint64_t on = w.uaddr;
    // A requeue moved the waits it did not wake to requeue_to: a release there after it is
    // what woke this one; none: the requeue itself woke it. glibc's condition variables no
    // longer requeue, but PI condition variables and older libraries do. Followed a few hops.
    for (int hop = 0; r && r->requeue_to && hop < 4; hop++) {
        const Release* next = release_on(w.pid, r->requeue_to, r->time, w.end, w.tid);
        if (!next || next->time < r->time) break;
        on = r->requeue_to;
        r = next;
    }
    if (!r) return;
    w.waker_known = true;
    w.waker_tid = r->tid;
    w.waker_stack = r->stack;
    w.woken_on = on;
}

void FutexWaits::exit(uint64_t time, uint32_t tid, int64_t ret) noexcept {
    auto it = open_.find(tid);
    // A release's exit, or a wait whose enter we did not see.
    if (it == open_.end() || !it->second.active) return;
    const Open o = it->second;
    it->second.active = false;
    active_--;
    if (time < o.start) return;
    Wait w;
    w.pid = o.pid;
    w.tid = tid;
    w.uaddr = o.uaddr;
    w.start = o.start;
    w.end = time;
    w.stack = o.stack;
    switch (ret) {
        case 0:
            w.how = End::Woken;
            find_waker(w);
            break;
        case kEtimedout:
            w.how = End::TimedOut;
            break;
        case kEintr:
        case kErestartsys:
        case kErestartnointr:
        case kErestartnohand:
        case kErestartBlock:
            w.how = End::Interrupted;
            break;
        case kEagain:
            sink_.retry(o.pid, tid, o.uaddr, o.stack);
            return;
        default:
            ++errors_;
            return;
    }
    sink_.wait(w);
}

void FutexWaits::clear() noexcept {
    open_.clear();
    active_ = 0;
    std::fill(releases_.begin(), releases_.end(), Release{});
}

// The threads seen, past the bound: those not waiting go; if that is not enough (threads that
// died without a futex exit, their exits lost), the older half of the open waits too.
void FutexWaits::trim() {
    std::erase_if(open_, [](const auto& kv) { return !kv.second.active; });
    if (open_.size() < kMaxOpen / 2) return;
    std::vector<uint64_t> starts;
    starts.reserve(open_.size());
    for (const auto& kv : open_) starts.push_back(kv.second.start);
    auto mid = starts.begin() + std::ptrdiff_t(starts.size() / 2);
    std::nth_element(starts.begin(), mid, starts.end());
    const uint64_t cut = *mid;
    const size_t dropped = std::erase_if(open_, [cut](const auto& kv) { return kv.second.start <= cut; });
    trimmed_ += dropped;
    active_ -= dropped;
}

}  // namespace perfprof::lock
