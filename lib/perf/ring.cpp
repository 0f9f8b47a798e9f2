#include "perf/ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "perf-prof/error.h"

namespace perfprof::perf {

RingReader::RingReader(perf_event_mmap_page* header, uint8_t* data, size_t data_size)
    : header_(header), data_(data), size_(data_size) {}

// The kernel writes data, then publishes data_head; we must read head with acquire
// semantics before reading data, and publish data_tail with release after we are done.
uint64_t RingReader::load_head() const {
    return __atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE);
}

void RingReader::store_tail(uint64_t tail) {
    __atomic_store_n(&header_->data_tail, tail, __ATOMIC_RELEASE);
}

bool RingReader::empty() const {
    return load_head() == header_->data_tail;
}

const perf_event_header* RingReader::record_at(uint64_t pos, uint64_t head) {
    const size_t mask = size_ - 1;
    const size_t off = pos & mask;
    perf_event_header h;
    if (head - pos < sizeof(h)) return nullptr;
    if (off + sizeof(h) <= size_) {
        std::memcpy(&h, data_ + off, sizeof(h));
    } else {
        size_t first = size_ - off;
        std::memcpy(&h, data_ + off, first);
        std::memcpy(reinterpret_cast<uint8_t*>(&h) + first, data_, sizeof(h) - first);
    }
    if (h.size < sizeof(h) || h.size > head - pos || h.size > size_) return nullptr;
    if (off + h.size <= size_) return reinterpret_cast<const perf_event_header*>(data_ + off);
    wrap_.resize((h.size + 7) / 8);
    uint8_t* dst = reinterpret_cast<uint8_t*>(wrap_.data());
    size_t first = size_ - off;
    std::memcpy(dst, data_ + off, first);
    std::memcpy(dst + first, data_, h.size - first);
    return reinterpret_cast<const perf_event_header*>(dst);
}

}  // namespace perfprof::perf

namespace perfprof::perf {

namespace {
core::Mmap map_ring(int fd, int pages) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t len = page * (static_cast<size_t>(pages) + 1);
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        throw Error::sys(
            err, "cannot map a ring buffer of " + std::to_string(pages) + " pages",
            err == EPERM ? "raise kernel.perf_event_mlock_kb or use a smaller -m" : std::string());
    }
    return core::Mmap(p, len);
}
}  // namespace

MappedRing::MappedRing(int fd, int pages)
    : fd_(fd),
      map_(map_ring(fd, pages)),
      reader_(static_cast<perf_event_mmap_page*>(map_.get()),
              static_cast<uint8_t*>(map_.get()) + ::sysconf(_SC_PAGESIZE),
              static_cast<size_t>(pages) * ::sysconf(_SC_PAGESIZE)) {}

}  // namespace perfprof::perf
