// Reading a perf ring buffer: the header page, then a power-of-two data area. Records that
// wrap the end of the data area are copied into an aligned side buffer so callers always see
// one contiguous record. Forward rings are consumed with drain(); overwrite rings
// (attr.write_backward=1, mapped read-only) with drain_backward().
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/fd.h"

namespace perfprof::perf {

class RingReader {
public:
    // `header` is the mmap'd perf_event_mmap_page; `data` its data area of `data_size` bytes
    // (a power of two).
    RingReader(perf_event_mmap_page* header, uint8_t* data, size_t data_size);

    // Calls fn(const perf_event_header&) for each record present when the call began, handing
    // the space back to the kernel as it goes (every eighth of the ring, and at the end): a
    // storm keeps writing while a long batch is printed, into the space already read.
    // Returns the number of records. fn must not throw nor keep the record.
    template <class F>
    size_t drain(F&& fn) {
        uint64_t head = load_head();
        uint64_t tail = header_->data_tail;
        uint64_t released = tail;
        const size_t step = size_ / 8;
        size_t n = 0;
        while (tail < head) {
            const perf_event_header* rec = record_at(tail, head);
            if (!rec) break;  // a torn or corrupt size: resynchronise at head
            fn(*rec);
            tail += rec->size;
            ++n;
            if (tail - released >= step) {
                store_tail(tail);
                released = tail;
            }
        }
        store_tail(head);
        return n;
    }

    // For a write_backward ring: calls fn(const perf_event_header&) for each record written
    // since the previous drain_backward that still survives, oldest first, and returns their
    // number. At most one buffer's worth is delivered; older data has been overwritten. The
    // ring is never written (it is mapped read-only; data_tail means nothing in this mode).
    // Pause the ring around the call (MappedRing::pause) so the kernel does not overwrite
    // records while they are being read; unpaused, reads stay in bounds but may be torn.
    // fn must not throw.
    template <class F>
    size_t drain_backward(F&& fn) {
        const uint64_t end = find_backward();
        size_t n = 0;
        for (size_t i = positions_.size(); i-- > 0;) {
            const perf_event_header* rec = record_at(positions_[i], end);
            if (!rec) continue;  // overwritten since it was found: the ring was not paused
            fn(*rec);
            ++n;
        }
        return n;
    }

    bool empty() const;
    size_t data_size() const { return size_; }

private:
    uint64_t load_head() const;
    void store_tail(uint64_t tail);
    const perf_event_header* record_at(uint64_t pos, uint64_t head);
    void read_header(size_t off, perf_event_header& h) const;
    // Fills positions_ with the start of each new record, newest first; returns the end of
    // the walked range (the bound for record_at).
    uint64_t find_backward();

    perf_event_mmap_page* header_;
    uint8_t* data_;
    size_t size_;
    std::vector<uint64_t> wrap_;  // u64 storage keeps wrapped records 8-byte aligned
    // Backward mode: the kernel's head starts at 0 and runs down, so 0 is where the previous
    // (first) drain "started"; records at or above it have been delivered.
    uint64_t backward_seen_ = 0;
    std::vector<uint64_t> positions_;
};

}  // namespace perfprof::perf

namespace perfprof::perf {

// A ring buffer mapped over a perf event fd: the header page plus `pages` data pages.
// `backward` is for events opened with write_backward=1: the kernel puts such a ring in
// overwrite mode only when it is mapped without PROT_WRITE, so it is mapped read-only and
// must be read with reader().drain_backward(), never drain() (which writes data_tail).
class MappedRing {
public:
    // Throws Error (EPERM hints at perf_event_mlock_kb).
    MappedRing(int fd, int pages, bool backward = false);
    MappedRing(MappedRing&&) noexcept = default;
    int fd() const { return fd_; }
    bool backward() const { return backward_; }
    RingReader& reader() { return reader_; }

    // PERF_EVENT_IOC_PAUSE_OUTPUT (Linux >= 4.7): while paused the kernel drops new records
    // (counting them as lost) instead of writing them, so an overwrite ring can be read
    // without being overwritten under the reader. Returns false when the ioctl fails (an old
    // kernel); reading unpaused is still safe, only possibly torn.
    bool pause(bool on);

    // pause(true), reader().drain_backward(fn), pause(false).
    template <class F>
    size_t drain_backward(F&& fn) {
        const bool paused = pause(true);
        size_t n = reader_.drain_backward(std::forward<F>(fn));
        if (paused) pause(false);
        return n;
    }

private:
    int fd_;
    bool backward_;
    core::Mmap map_;
    RingReader reader_;
};

}  // namespace perfprof::perf
