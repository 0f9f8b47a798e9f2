#include "heap/agent_channel.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "heap/agent/ring.h"
#include "heap/sampling.h"
#include "perf-prof/error.h"

namespace perfprof::heap {

namespace {

uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) & ~(a - 1);
}

}  // namespace

AgentChannel::AgentChannel(const AgentChannelOptions& o) {
    if (o.mode != PPH_FULL && o.mode != PPH_SAMPLED) throw Error("heap agent: unknown channel mode");
    if (o.mode == PPH_SAMPLED && o.rate == 0) throw Error("heap agent: sampled mode needs a rate");
    const bool full = o.mode == PPH_FULL;
    ring_slots_ =
        std::bit_ceil(std::max<uint64_t>(o.ring_slots ? o.ring_slots : (full ? 256 << 10 : 16 << 10), 2));
    stack_slots_ =
        std::bit_ceil(std::max<uint64_t>(o.stack_slots ? o.stack_slots : (full ? 64 << 10 : 16 << 10), 2));
    pool_words_ = o.pool_words ? o.pool_words : (full ? 4 << 20 : 1 << 20);
    max_frames_ = std::min<uint32_t>(o.max_frames, PPH_MAX_FRAMES);
    if (ring_slots_ > (1ull << 28) || stack_slots_ > (1ull << 28) || pool_words_ > (1ull << 30))
        throw Error("heap agent: channel too large");

    const uint64_t gaps_off = PPH_HEADER_SIZE;
    const uint64_t ring_off = align_up(gaps_off + PPH_GAPS * 8, 4096);
    const uint64_t stacks_off = align_up(ring_off + ring_slots_ * sizeof(pph_rec), 4096);
    const uint64_t pool_off = align_up(stacks_off + stack_slots_ * sizeof(pph_stack), 4096);
    size_ = align_up(pool_off + pool_words_ * 8, 4096);

    struct stat st;
    if (::stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error("heap agent: /dev/shm is missing: the channel to the agent lives there",
                    "mount a tmpfs on /dev/shm, or use --probes=ebpf");
    // <n>, the monotonic clock's ns, is never used twice by this process: the name of an
    // unlinked channel stays in the environment of the target's exec'd children, whose agent
    // must not find another target's channel under it. O_EXCL skips files a dead process left.
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        path_ =
            "/dev/shm/perf-prof-heap." + std::to_string(::getpid()) + "." + std::to_string(monotonic_ns());
        fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) throw Error::sys(errno, "heap agent: cannot create " + path_);
    }
    if (fd < 0) throw Error("heap agent: cannot create a channel file under /dev/shm");
    owned_ = true;
    unlinked_ = false;
    auto fail = [&](int err, const std::string& what) {
        ::close(fd);
        unlink_path();
        throw Error::sys(err, "heap agent: " + what + " " + path_);
    };
    if ((o.uid != uid_t(-1) || o.gid != gid_t(-1)) && ::fchown(fd, o.uid, o.gid) != 0)
        fail(errno, "cannot chown");
    if (::ftruncate(fd, off_t(size_)) != 0) fail(errno, "cannot size");
    void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) fail(errno, "cannot map");
    ::close(fd);
    h_ = static_cast<pph_header*>(m);

    h_->magic = PPH_MAGIC;
    h_->version = PPH_VERSION;
    h_->mode = o.mode;
    h_->flags = o.flags;
    h_->max_frames = max_frames_;
    h_->profiler_pid = ::getpid();
    h_->target_pid = o.target_pid;
    h_->rate = o.rate;
    h_->map_size = size_;
    h_->gaps_off = gaps_off;
    h_->ring_off = ring_off;
    h_->ring_slots = ring_slots_;
    h_->stacks_off = stacks_off;
    h_->stack_slots = stack_slots_;
    h_->pool_off = pool_off;
    h_->pool_words = pool_words_;
    auto* base = static_cast<char*>(m);
    if (o.mode == PPH_SAMPLED) {
        const std::vector<uint64_t> gaps = sample_gap_quantiles(o.rate, PPH_GAPS);
        std::memcpy(base + gaps_off, gaps.data(), PPH_GAPS * 8);
    }
    ring_ = reinterpret_cast<pph_rec*>(base + ring_off);
    stacks_ = reinterpret_cast<const pph_stack*>(base + stacks_off);
    pool_ = reinterpret_cast<const uint64_t*>(base + pool_off);
    pph_ring_init(ring_, ring_slots_);
    heartbeat();
}

AgentChannel::AgentChannel(void* mapping, size_t size) : h_(static_cast<pph_header*>(mapping)), size_(size) {
    if (size < PPH_HEADER_SIZE) throw Error("heap agent: channel smaller than its header");
    // Read once; everything below is checked against `size`, never re-read.
    const pph_header copy = *h_;
    auto fits = [&](uint64_t off, uint64_t n, uint64_t unit) {
        return off >= PPH_HEADER_SIZE && off <= size && n <= (size - off) / unit && off % 8 == 0;
    };
    if (!std::has_single_bit(copy.ring_slots) || !fits(copy.ring_off, copy.ring_slots, sizeof(pph_rec)) ||
        !std::has_single_bit(copy.stack_slots) ||
        !fits(copy.stacks_off, copy.stack_slots, sizeof(pph_stack)) ||
        !fits(copy.pool_off, copy.pool_words, 8))
        throw Error("heap agent: channel layout out of its mapping");
    auto* base = static_cast<char*>(mapping);
    ring_ = reinterpret_cast<pph_rec*>(base + copy.ring_off);
    stacks_ = reinterpret_cast<const pph_stack*>(base + copy.stacks_off);
    pool_ = reinterpret_cast<const uint64_t*>(base + copy.pool_off);
    ring_slots_ = copy.ring_slots;
    stack_slots_ = copy.stack_slots;
    pool_words_ = copy.pool_words;
    max_frames_ = std::min<uint32_t>(copy.max_frames, PPH_MAX_FRAMES);
    tail_ = copy.tail;
}

AgentChannel::~AgentChannel() {
    if (owned_) {
        unlink_path();
        if (h_) ::munmap(h_, size_);
    }
}

void AgentChannel::unlink_path() {
    if (!unlinked_) {
        ::unlink(path_.c_str());
        unlinked_ = true;
    }
}

uint32_t AgentChannel::state() const {
    return __atomic_load_n(&h_->state, __ATOMIC_ACQUIRE);
}

std::string AgentChannel::error() const {
    char buf[sizeof h_->error];
    std::memcpy(buf, h_->error, sizeof buf);
    return std::string(buf, strnlen(buf, sizeof buf));
}

uint32_t AgentChannel::wait_attached(int timeout_ms) const {
    const uint64_t end = monotonic_ns() + uint64_t(std::max(timeout_ms, 0)) * 1000000ull;
    for (;;) {
        const uint32_t s = state();
        if (s != PPH_STATE_NONE || monotonic_ns() >= end) return s;
        ::usleep(1000);
    }
}

size_t AgentChannel::drain(const std::function<void(const pph_rec&)>& fn) {
    heartbeat();
    // The consumer's positions are perf-prof's own: a header the target scribbled on can
    // neither move the mask nor the read position out of the ring. The shared tail is kept in
    // step for the record (producers only read the slots' seq).
    pph_header shadow{};
    shadow.ring_slots = ring_slots_;
    shadow.tail = tail_;
    size_t n = 0;
    pph_rec r;
    while (pph_ring_pop(&shadow, ring_, &r)) {
        fn(r);
        n++;
    }
    tail_ = shadow.tail;
    __atomic_store_n(&h_->tail, tail_, __ATOMIC_RELEASE);
    return n;
}

bool AgentChannel::stalled() const {
    return __atomic_load_n(&h_->head, __ATOMIC_RELAXED) != tail_;
}

void AgentChannel::skip_stalled() {
    if (!stalled()) return;
    pph_header shadow{};
    shadow.ring_slots = ring_slots_;
    shadow.tail = tail_;
    pph_ring_skip(&shadow, ring_);
    tail_ = shadow.tail;
    __atomic_store_n(&h_->tail, tail_, __ATOMIC_RELEASE);
}

void AgentChannel::heartbeat() {
    __atomic_store_n(&h_->heartbeat_ns, monotonic_ns(), __ATOMIC_RELEASE);
}

std::span<const uint64_t> AgentChannel::stack(uint32_t id) const {
    if (id == 0 || id > stack_slots_) return {};
    const pph_stack* e = &stacks_[id - 1];
    if (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE)) return {};
    const uint64_t frames = __atomic_load_n(&e->frames, __ATOMIC_RELAXED);
    const uint64_t nframes = __atomic_load_n(&e->nframes, __ATOMIC_RELAXED);
    if (nframes > max_frames_ || frames > pool_words_ || nframes > pool_words_ - frames) return {};
    return {pool_ + frames, size_t(nframes)};
}

void AgentChannel::finish_exit_scan() {
    __atomic_store_n(&h_->scan_done, 1u, __ATOMIC_RELEASE);
    ::syscall(SYS_futex, &h_->scan_done, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace perfprof::heap
