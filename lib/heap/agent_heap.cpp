#include "heap/agent_heap.h"

#include <linux/perf_event.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <csignal>

#include "core/time.h"

namespace perfprof::heap {

void AgentBook::apply(const pph_rec& r, uint64_t now_ns) {
    if (!r.ptr) return;
    if (r.type == PPH_REC_ALLOC) {
        // A block handed out again is no free memory any more, and replaces any stale entry (a
        // free the ring dropped).
        if (full_ && !freed_.empty()) freed_.erase(r.ptr);
        live_.put(r.ptr, Live{r.size, now_ns, r.stack});
        allocs_++;
        if (r.stack) {
            if (r.stack >= totals_.size()) totals_.resize(size_t(r.stack) + 1 + totals_.size() / 2);
            StackTotals& t = totals_[r.stack];
            t.bytes += r.size;
            t.objects++;
        }
    } else if (r.type == PPH_REC_FREE) {
        frees_++;
        Live was;
        const bool known = live_.erase(r.ptr, &was);
        // A block allocated before the attach is free memory too (its stale contents are no
        // roots): kept with the size the agent gives (0: unknown, the scan reads the chunk's).
        if (full_) freed_.put(r.ptr, std::max(known ? was.size : 0, r.size));
    }
}

std::vector<uint64_t> agent_chain(std::span<const uint64_t> frames) {
    std::vector<uint64_t> c;
    c.reserve(frames.size() + 1);
    c.push_back(PERF_CONTEXT_USER);
    c.insert(c.end(), frames.begin(), frames.end());
    return c;
}

AgentHeap::AgentHeap(std::unique_ptr<AgentSource> ch, unsigned period_ms, std::function<void()> tick)
    : ch_(std::move(ch)), book_(ch_->header()->mode == PPH_FULL), tick_(std::move(tick)) {
    if (!period_ms) return;
    // The drain thread takes no signal: the session reads them from its signalfd.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([this, period_ms] { run(period_ms); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

AgentHeap::~AgentHeap() {
    stop();
}

void AgentHeap::stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
}

void AgentHeap::run(unsigned period_ms) {
    while (!stop_.load(std::memory_order_relaxed)) {
        uint64_t before = drained_.load(std::memory_order_relaxed);
        {
            std::lock_guard<std::mutex> g(mu_);
            drain_locked();
        }
        if (tick_) tick_();
        // A busy ring is drained again at once; an idle one after the period.
        if (drained_.load(std::memory_order_relaxed) == before)
            std::this_thread::sleep_for(std::chrono::milliseconds(period_ms));
    }
}

void AgentHeap::drain_locked() {
    const uint64_t now = uint64_t(core::monotonic_now_ns());
    const uint64_t n = ch_->drain([&](const pph_rec& r) { book_.apply(r, now); });
    drained_.fetch_add(n, std::memory_order_relaxed);
}

void AgentHeap::poll() {
    std::lock_guard<std::mutex> g(mu_);
    // Until the ring is empty: a report must see every call made before it.
    for (int i = 0; i < 1000; i++) {
        const uint64_t before = drained_.load(std::memory_order_relaxed);
        drain_locked();
        if (drained_.load(std::memory_order_relaxed) == before) break;
    }
}

std::vector<HeapAlloc> AgentHeap::allocations() const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<HeapAlloc> out;
    out.reserve(book_.live().size());
    book_.live().for_each([&](uint64_t ptr, const AgentBook::Live& l) {
        out.push_back({ptr, l.size, l.stack, l.time_ns, 0});
    });
    return out;
}

std::map<uint64_t, StackTotals> AgentHeap::alloc_totals() const {
    std::lock_guard<std::mutex> g(mu_);
    std::map<uint64_t, StackTotals> out;
    const std::vector<StackTotals>& t = book_.totals();
    for (size_t i = 1; i < t.size(); i++)
        if (t[i].objects) out.emplace(uint64_t(i), t[i]);
    return out;
}

std::vector<Block> AgentHeap::freed() const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<Block> out;
    out.reserve(book_.freed_blocks().size());
    book_.freed_blocks().for_each([&](uint64_t ptr, uint64_t size) { out.push_back({ptr, size}); });
    return out;
}

const std::vector<uint64_t>& AgentHeap::chain(uint64_t stack) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = chains_.find(stack);
    if (it != chains_.end()) return it->second;
    std::span<const uint64_t> frames;
    if (stack && stack <= UINT32_MAX) frames = ch_->stack(uint32_t(stack));
    // The agent publishes a stack before the record that names it: what is read now stays.
    std::vector<uint64_t> c = agent_chain(frames);
    return chains_.emplace(stack, std::move(c)).first->second;
}

HeapStats AgentHeap::stats() const {
    std::lock_guard<std::mutex> g(mu_);
    const pph_header* h = ch_->header();
    HeapStats s;
    s.total_alloc = book_.allocs();
    s.total_free = book_.frees();
    s.dropped_allocs = __atomic_load_n(&h->dropped_records, __ATOMIC_RELAXED);
    s.dropped_stacks = __atomic_load_n(&h->dropped_stacks, __ATOMIC_RELAXED);
    s.exit_sp = __atomic_load_n(&h->exit_sp, __ATOMIC_ACQUIRE);
    s.exit_tid = __atomic_load_n(&h->exit_tid, __ATOMIC_ACQUIRE);
    return s;
}

std::vector<Region> AgentHeap::agent_ranges() const {
    const pph_header* h = ch_->header();
    std::vector<Region> out;
    for (const pph_range& r : h->agent_ranges) {
        const uint64_t start = __atomic_load_n(&r.start, __ATOMIC_ACQUIRE);
        const uint64_t end = __atomic_load_n(&r.end, __ATOMIC_ACQUIRE);
        if (end > start) out.push_back({start, end});
    }
    return out;
}

bool AgentHeap::exit_waiting() const {
    return __atomic_load_n(&ch_->header()->exit_state, __ATOMIC_ACQUIRE) == PPH_EXIT_WAITING;
}

void AgentHeap::finish_exit_scan() {
    ch_->finish_exit_scan();
}

}  // namespace perfprof::heap
