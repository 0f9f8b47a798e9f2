#include "heap/reachability.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "core/fd.h"
#include "core/text.h"
#include "perf/proc_tasks.h"
#include "sym/syms.h"

namespace perfprof::heap {

namespace {

// glibc's chunk size for a request of n bytes (request2size): the size word, the n bytes,
// aligned to 16, at least 32.
uint64_t glibc_chunk(uint64_t n) {
    return std::max<uint64_t>(32, (n + 8 + 15) & ~uint64_t(15));
}

class Marker {
public:
    Marker(const std::vector<Block>& blocks, const ReadMemory& read, std::vector<Block> skip,
           HeapLayout layout)
        : blocks_(blocks),
          read_(read),
          marked_(blocks.size(), false),
          skip_(std::move(skip)),
          glibc_(layout == HeapLayout::Glibc) {
        for (const Block& b : blocks) {
            // With glibc the root scan leaves out the chunk's slack too (up to the next chunk's
            // size word); the block's own scan reads its n bytes only, as valgrind's does.
            const uint64_t usable = glibc_ ? std::max(b.size, glibc_chunk(b.size) - 8) : b.size;
            skip_.push_back({b.addr, usable});
        }
        std::sort(skip_.begin(), skip_.end(), [](const Block& a, const Block& b) { return a.addr < b.addr; });
        for (const Block& b : blocks) {
            lo_ = std::min(lo_, b.addr);
            hi_ = std::max(hi_, b.addr + std::max<uint64_t>(b.size, 1));
        }
        buf_.resize(kChunk / 8);
    }

    // Scans [start, end) except the blocks' own bytes, which count only once marked, and
    // free memory.
    void scan_root(uint64_t start, uint64_t end) {
        auto it = std::upper_bound(skip_.begin(), skip_.end(), start,
                                   [](uint64_t a, const Block& b) { return a < b.addr; });
        // Ranges may overlap (a freed block partly reused): step back over every one reaching `start`.
        while (it != skip_.begin() && std::prev(it)->addr + std::prev(it)->size > start) --it;
        uint64_t at = start;
        for (; it != skip_.end() && it->addr < end; ++it) {
            if (it->addr > at) scan(at, it->addr);
            at = std::max(at, it->addr + it->size);
        }
        if (at < end) scan(at, end);
    }

    void drain() {
        while (!work_.empty()) {
            size_t i = work_.back();
            work_.pop_back();
            scan(blocks_[i].addr, blocks_[i].addr + blocks_[i].size);
        }
    }

    std::vector<bool> result() { return std::move(marked_); }

private:
    static constexpr size_t kChunk = size_t(1) << 20;

    void scan(uint64_t start, uint64_t end) {
        start = (start + 7) & ~uint64_t(7);
        while (start + 8 <= end) {
            const size_t len = size_t(std::min<uint64_t>(kChunk, (end - start) & ~uint64_t(7)));
            if (read_(start, buf_.data(), len)) {
                check_words(len / 8);
            } else {
                // Something unreadable inside (a guard page): page by page.
                for (uint64_t p = start; p < start + len;) {
                    const uint64_t pe = std::min<uint64_t>(start + len, (p | 4095) + 1);
                    if (read_(p, buf_.data(), size_t(pe - p))) check_words(size_t(pe - p) / 8);
                    p = pe;
                }
            }
            start += len;
        }
    }

    void check_words(size_t n) {
        for (size_t w = 0; w < n; w++) check(buf_[w]);
    }

    void check(uint64_t v) {
        if (v < lo_ || v >= hi_) return;
        auto it = std::upper_bound(blocks_.begin(), blocks_.end(), v,
                                   [](uint64_t a, const Block& b) { return a < b.addr; });
        if (it == blocks_.begin()) return;
        --it;
        if (v >= it->addr + std::max<uint64_t>(it->size, 1)) return;
        // glibc: the next chunk's header, which starts inside the block when the block's size
        // % 16 is 1 to 8 (see HeapLayout).
        if (glibc_ && v != it->addr && v == it->addr - 16 + glibc_chunk(it->size)) return;
        const size_t i = size_t(it - blocks_.begin());
        if (marked_[i]) return;
        marked_[i] = true;
        work_.push_back(i);
    }

    const std::vector<Block>& blocks_;
    const ReadMemory& read_;
    std::vector<bool> marked_;
    std::vector<Block> skip_;  // the blocks and free memory, by address
    bool glibc_;
    std::vector<size_t> work_;
    std::vector<uint64_t> buf_;
    uint64_t lo_ = UINT64_MAX, hi_ = 0;
};

}  // namespace

std::vector<bool> mark_reachable(const std::vector<Block>& blocks, const std::vector<Region>& roots,
                                 const ReadMemory& read, std::vector<Block> free_memory, HeapLayout layout) {
    Marker m(blocks, read, std::move(free_memory), layout);
    if (blocks.empty()) return {};
    for (const Region& r : roots) {
        m.scan_root(r.start, r.end);
        m.drain();
    }
    return m.result();
}

namespace {

// Each thread's user stack pointer: /proc/PID/task/TID/syscall reads "NR ARGS... SP PC" for a
// thread in a syscall and "-1 SP PC" for one stopped elsewhere; "running" has none.
std::vector<uint64_t> thread_sps(int pid) {
    std::vector<uint64_t> sps;
    const std::string task = "/proc/" + std::to_string(pid) + "/task/";
    for (int tid : perf::tasks_of(pid)) {
        std::ifstream in(task + std::to_string(tid) + "/syscall");
        std::vector<std::string> f;
        for (std::string w; in >> w;) f.push_back(w);
        if (f.size() >= 3 && f[0] != "running") sps.push_back(std::stoull(f[f.size() - 2], nullptr, 16));
    }
    return sps;
}

}  // namespace

std::vector<Region> process_roots(int pid, uint64_t extra_sp) {
    // (stack pointer, where its live stack starts).
    std::vector<std::pair<uint64_t, uint64_t>> sps;
    for (uint64_t sp : thread_sps(pid)) sps.emplace_back(sp, (sp - 128) & ~uint64_t(7));
    // The thread stopped at exit()'s entry reads about the same pointer in /proc (an
    // instruction later): its mapping starts at the higher `extra_sp`.
    if (extra_sp) sps.emplace_back(extra_sp, extra_sp);
    std::vector<Region> roots;
    const std::string maps = core::read_file_or_empty("/proc/" + std::to_string(pid) + "/maps");
    sym::MapsLine m;
    for (size_t pos = 0; pos < maps.size();) {
        if (!sym::parse_maps_line(core::next_line(maps, pos), m)) continue;
        if (m.perms[0] != 'r' || m.perms[1] != 'w') continue;
        if (m.path == "[vvar]" || m.path == "[vsyscall]" || m.path == "[vvar_vclock]") continue;
        Region r{m.start, m.end};
        for (auto [sp, live] : sps)
            if (sp >= r.start && sp < r.end) r.start = std::max(r.start, live);
        roots.push_back(r);
    }
    return roots;
}

ReadMemory process_memory(int pid) {
    auto fd = std::make_shared<core::Fd>(
        ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
    return [fd](uint64_t addr, void* buf, size_t len) {
        if (!*fd) return false;
        return ::pread(fd->get(), buf, len, off_t(addr)) == ssize_t(len);
    };
}

}  // namespace perfprof::heap
