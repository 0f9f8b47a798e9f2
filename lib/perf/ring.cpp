#include "perf/ring.h"

#include <sys/ioctl.h>
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

// A header may itself wrap the end of the data area.
void RingReader::read_header(size_t off, perf_event_header& h) const {
    if (off + sizeof(h) <= size_) {
        std::memcpy(&h, data_ + off, sizeof(h));
    } else {
        size_t first = size_ - off;
        std::memcpy(&h, data_ + off, first);
        std::memcpy(reinterpret_cast<uint8_t*>(&h) + first, data_, sizeof(h) - first);
    }
}

const perf_event_header* RingReader::record_at(uint64_t pos, uint64_t head) {
    const size_t mask = size_ - 1;
    const size_t off = pos & mask;
    perf_event_header h;
    if (head - pos < sizeof(h)) return nullptr;
    read_header(off, h);
    if (h.size < sizeof(h) || h.size > head - pos || h.size > size_) return nullptr;
    if (off + h.size <= size_) return reinterpret_cast<const perf_event_header*>(data_ + off);
    wrap_.resize((h.size + 7) / 8);
    uint8_t* dst = reinterpret_cast<uint8_t*>(wrap_.data());
    size_t first = size_ - off;
    std::memcpy(dst, data_ + off, first);
    std::memcpy(dst + first, data_, h.size - first);
    return reinterpret_cast<const perf_event_header*>(dst);
}

// In write_backward mode the kernel reserves each record *below* the previous one and
// publishes the lowered head, so data_head runs down from 0 (it is "negative" as a u64) and
// the newest record starts at data_head. Walking up from head visits records newest to
// oldest, back to the head of the previous drain (everything above was delivered then), or
// one buffer size when more than that was written: beyond it the oldest records are
// (partly) overwritten. Pages are zeroed by the kernel, so a zero size marks never-written
// space. Any other implausible size ends the walk: what came before it is still good.
uint64_t RingReader::find_backward() {
    positions_.clear();
    const uint64_t head = load_head();
    uint64_t limit = backward_seen_ - head;  // bytes written since the previous drain
    if (limit > size_) limit = size_;
    backward_seen_ = head;
    if (head % 8 != 0) return head;  // kernel records are u64-aligned: a garbage header page
    const size_t mask = size_ - 1;
    const uint64_t end = head + limit;
    uint64_t pos = head;
    while (end - pos >= sizeof(perf_event_header)) {
        perf_event_header h;
        read_header(pos & mask, h);
        if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > end - pos) break;
        positions_.push_back(pos);
        pos += h.size;
    }
    return end;
}

}  // namespace perfprof::perf

namespace perfprof::perf {

namespace {
// A writable mapping tells the kernel that we move data_tail and it must not overwrite
// unread data; a read-only one selects overwrite mode (rb->overwrite), which is what
// write_backward rings are made for.
core::Mmap map_ring(int fd, int pages, bool backward) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t len = page * (static_cast<size_t>(pages) + 1);
    const int prot = backward ? PROT_READ : PROT_READ | PROT_WRITE;
    void* p = ::mmap(nullptr, len, prot, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        throw Error::sys(
            err, "cannot map a ring buffer of " + std::to_string(pages) + " pages",
            err == EPERM ? "raise kernel.perf_event_mlock_kb or use a smaller -m" : std::string());
    }
    return core::Mmap(p, len);
}
}  // namespace

MappedRing::MappedRing(int fd, int pages, bool backward)
    : fd_(fd),
      backward_(backward),
      map_(map_ring(fd, pages, backward)),
      reader_(static_cast<perf_event_mmap_page*>(map_.get()),
              static_cast<uint8_t*>(map_.get()) + ::sysconf(_SC_PAGESIZE),
              static_cast<size_t>(pages) * ::sysconf(_SC_PAGESIZE)) {}

bool MappedRing::pause(bool on) {
    return ::ioctl(fd_, PERF_EVENT_IOC_PAUSE_OUTPUT, on ? 1 : 0) == 0;
}

}  // namespace perfprof::perf
