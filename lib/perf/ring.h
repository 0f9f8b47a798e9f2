// Reading a perf ring buffer: the header page, then a power-of-two data area. Records that
// wrap the end of the data area are copied into an aligned side buffer so callers always see
// one contiguous record.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/fd.h"

namespace perfprof::perf {

class RingReader {
public:
    // `header` is the mmap'd perf_event_mmap_page; `data` its data area of `data_size` bytes
    // (a power of two).
    RingReader(perf_event_mmap_page* header, uint8_t* data, size_t data_size);

    // Calls fn(const perf_event_header&) for each record present when the call began, then
    // hands the space back to the kernel. Returns the number of records. fn must not throw.
    template <class F>
    size_t drain(F&& fn) {
        uint64_t head = load_head();
        uint64_t tail = header_->data_tail;
        size_t n = 0;
        while (tail < head) {
            const perf_event_header* rec = record_at(tail, head);
            if (!rec) break;  // a torn or corrupt size: resynchronise at head
            fn(*rec);
            tail += rec->size;
            ++n;
        }
        store_tail(head);
        return n;
    }

    bool empty() const;
    size_t data_size() const { return size_; }

private:
    uint64_t load_head() const;
    void store_tail(uint64_t tail);
    const perf_event_header* record_at(uint64_t pos, uint64_t head);

    perf_event_mmap_page* header_;
    uint8_t* data_;
    size_t size_;
    std::vector<uint64_t> wrap_;  // u64 storage keeps wrapped records 8-byte aligned
};

}  // namespace perfprof::perf

namespace perfprof::perf {

// A ring buffer mapped over a perf event fd: the header page plus `pages` data pages.
class MappedRing {
public:
    MappedRing(int fd, int pages);  // throws Error (EPERM hints at perf_event_mlock_kb)
    MappedRing(MappedRing&&) noexcept = default;
    int fd() const { return fd_; }
    RingReader& reader() { return reader_; }

private:
    int fd_;
    core::Mmap map_;
    RingReader reader_;
};

}  // namespace perfprof::perf
