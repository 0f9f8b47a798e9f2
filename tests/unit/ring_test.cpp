// RingReader (forward and write_backward) and record decoding, on synthetic ring buffers laid
// out like the kernel's, plus one overwrite ring from the real kernel.
#include <gtest/gtest.h>

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/fd.h"
#include "perf/record.h"
#include "perf/ring.h"
#include "tep/tracefs.h"

using perfprof::Sample;
using namespace perfprof::perf;

namespace {

// A fake mapping: a header page and a data area, with a writer that behaves like the kernel.
class FakeRing {
public:
    explicit FakeRing(size_t data_size) : data_(data_size) { std::memset(&hdr_, 0, sizeof(hdr_)); }
    RingReader reader() { return RingReader(&hdr_, data_.data(), data_.size()); }

    // Writes a record of `size` bytes (multiple of 8) whose payload bytes are `fill`.
    void write(uint32_t type, uint16_t size, uint8_t fill) {
        std::vector<uint8_t> rec(size, fill);
        perf_event_header h{type, 0, size};
        std::memcpy(rec.data(), &h, sizeof(h));
        write_bytes(rec);
    }
    void write_bytes(const std::vector<uint8_t>& rec) {
        for (size_t i = 0; i < rec.size(); i++) data_[(head_ + i) & (data_.size() - 1)] = rec[i];
        head_ += rec.size();
        hdr_.data_head = head_;
    }
    uint64_t tail() const { return hdr_.data_tail; }
    void set_tail(uint64_t t) { hdr_.data_tail = t, head_ = t, hdr_.data_head = t; }

private:
    perf_event_mmap_page hdr_;
    std::vector<uint8_t> data_;
    uint64_t head_ = 0;
};

struct Seen {
    uint32_t type;
    uint16_t size;
    bool payload_ok;
};

std::vector<Seen> drain_all(RingReader& r) {
    std::vector<Seen> out;
    r.drain([&](const perf_event_header& h) {
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&h);
        bool ok = (reinterpret_cast<uintptr_t>(p) % 8) == 0;
        for (size_t i = sizeof(h); i < h.size; i++) ok = ok && p[i] == p[sizeof(h)];
        out.push_back({h.type, h.size, ok});
    });
    return out;
}

}  // namespace

TEST(RingReader, ReadsRecordsInOrderAndHandsSpaceBack) {
    FakeRing ring(4096);
    ring.write(PERF_RECORD_SAMPLE, 32, 0xaa);
    ring.write(PERF_RECORD_LOST, 40, 0xbb);
    RingReader r = ring.reader();
    auto seen = drain_all(r);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].type, uint32_t(PERF_RECORD_SAMPLE));
    EXPECT_EQ(seen[1].size, 40);
    EXPECT_TRUE(seen[0].payload_ok && seen[1].payload_ok);
    EXPECT_EQ(ring.tail(), 72u);
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(drain_all(r).size(), 0u);
}

TEST(RingReader, SpaceIsHandedBackDuringALongDrain) {
    // 64 records of 64 bytes fill the 4 KiB ring; every eighth of it (512 bytes, 8 records)
    // is handed back while the later records are still being read.
    FakeRing ring(4096);
    for (int i = 0; i < 64; i++) ring.write(PERF_RECORD_SAMPLE, 64, uint8_t(i));
    RingReader r = ring.reader();
    std::vector<uint64_t> tails;
    EXPECT_EQ(r.drain([&](const perf_event_header&) { tails.push_back(ring.tail()); }), 64u);
    ASSERT_EQ(tails.size(), 64u);
    for (size_t i = 0; i < tails.size(); i++) EXPECT_EQ(tails[i], i / 8 * 512) << "record " << i;
    EXPECT_EQ(ring.tail(), 4096u);
}

TEST(RingReader, RecordWrappingTheEndIsContiguousAndAligned) {
    FakeRing ring(256);
    ring.set_tail(232);                        // 24 bytes before the end of the data area
    ring.write(PERF_RECORD_SAMPLE, 64, 0x5c);  // 24 bytes at the end, 40 at the start
    ring.write(PERF_RECORD_SAMPLE, 16, 0x11);
    RingReader r = ring.reader();
    auto seen = drain_all(r);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].size, 64);
    EXPECT_TRUE(seen[0].payload_ok);
    EXPECT_TRUE(seen[1].payload_ok);
    EXPECT_EQ(ring.tail(), 232u + 80u);
}

TEST(RingReader, HeaderItselfSplitAcrossTheEnd) {
    FakeRing ring(256);
    ring.set_tail(252);  // only 4 header bytes fit before the end
    ring.write(PERF_RECORD_SAMPLE, 24, 0x77);
    RingReader r = ring.reader();
    auto seen = drain_all(r);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].size, 24);
    EXPECT_TRUE(seen[0].payload_ok);
}

TEST(RingReader, CorruptSizeSkipsToHeadInsteadOfLooping) {
    FakeRing ring(256);
    ring.write(PERF_RECORD_SAMPLE, 16, 0x01);
    std::vector<uint8_t> bad(16, 0);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, 0};  // size 0 would never advance
    std::memcpy(bad.data(), &h, sizeof(h));
    ring.write_bytes(bad);
    RingReader r = ring.reader();
    auto seen = drain_all(r);
    EXPECT_EQ(seen.size(), 1u);
    EXPECT_EQ(ring.tail(), 32u);  // everything handed back
}

// ---- write_backward (overwrite) rings ----

namespace {

// The kernel in write_backward mode: each record is reserved below the previous one and the
// lowered head (a "negative" u64, starting at 0) is published in data_head.
class FakeBackwardRing {
public:
    explicit FakeBackwardRing(size_t data_size) : data_(data_size, 0) { std::memset(&hdr_, 0, sizeof(hdr_)); }
    RingReader reader() { return RingReader(&hdr_, data_.data(), data_.size()); }

    void write(uint32_t type, uint16_t size, uint8_t fill) {
        std::vector<uint8_t> rec(size, fill);
        perf_event_header h{type, 0, size};
        std::memcpy(rec.data(), &h, sizeof(h));
        write_bytes(rec);
    }
    void write_bytes(const std::vector<uint8_t>& rec) {
        head_ -= rec.size();
        for (size_t i = 0; i < rec.size(); i++) data_[(head_ + i) & (data_.size() - 1)] = rec[i];
        hdr_.data_head = head_;
    }
    // Moves the head without writing, as if the ring had been used before this reader.
    void set_head(uint64_t h) { head_ = h, hdr_.data_head = h; }
    uint64_t head() const { return head_; }
    uint8_t* data() { return data_.data(); }
    size_t size() const { return data_.size(); }
    perf_event_mmap_page& hdr() { return hdr_; }

private:
    perf_event_mmap_page hdr_;
    std::vector<uint8_t> data_;
    uint64_t head_ = 0;
};

// type, size, payload fill, payload uniform and record 8-byte aligned.
struct SeenB {
    uint32_t type;
    uint16_t size;
    uint8_t fill;
    bool ok;
};

std::vector<SeenB> drain_back(RingReader& r) {
    std::vector<SeenB> out;
    size_t n = r.drain_backward([&](const perf_event_header& h) {
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&h);
        bool ok = (reinterpret_cast<uintptr_t>(p) % 8) == 0;
        for (size_t i = sizeof(h); i < h.size; i++) ok = ok && p[i] == p[sizeof(h)];
        out.push_back({h.type, h.size, h.size > sizeof(h) ? p[sizeof(h)] : uint8_t(0), ok});
    });
    EXPECT_EQ(n, out.size());
    return out;
}

std::vector<int> fills(const std::vector<SeenB>& v) {
    std::vector<int> out;
    for (const SeenB& s : v) {
        EXPECT_TRUE(s.ok) << "record " << int(s.fill) << " torn or misaligned";
        out.push_back(s.fill);
    }
    return out;
}

}  // namespace

TEST(RingReaderBackward, EmptyRingDeliversNothing) {
    FakeBackwardRing ring(4096);
    RingReader r = ring.reader();
    EXPECT_TRUE(drain_back(r).empty());
    EXPECT_EQ(ring.hdr().data_tail, 0u);  // never written: the mapping is read-only
}

TEST(RingReaderBackward, PartiallyFilledDeliversOldestFirst) {
    FakeBackwardRing ring(4096);
    ring.write(PERF_RECORD_SAMPLE, 32, 1);
    ring.write(PERF_RECORD_LOST, 40, 2);
    ring.write(PERF_RECORD_SAMPLE, 16, 3);
    RingReader r = ring.reader();
    auto seen = drain_back(r);
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(fills(seen), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(seen[1].type, uint32_t(PERF_RECORD_LOST));
    EXPECT_EQ(seen[1].size, 40);
    EXPECT_EQ(ring.hdr().data_tail, 0u);
}

TEST(RingReaderBackward, RepeatedDrainsDeliverOnlyNewRecords) {
    FakeBackwardRing ring(4096);
    RingReader r = ring.reader();
    ring.write(PERF_RECORD_SAMPLE, 24, 1);
    ring.write(PERF_RECORD_SAMPLE, 24, 2);
    EXPECT_EQ(fills(drain_back(r)), (std::vector<int>{1, 2}));
    EXPECT_TRUE(drain_back(r).empty());
    ring.write(PERF_RECORD_SAMPLE, 32, 3);
    ring.write(PERF_RECORD_SAMPLE, 16, 4);
    ring.write(PERF_RECORD_SAMPLE, 24, 5);
    EXPECT_EQ(fills(drain_back(r)), (std::vector<int>{3, 4, 5}));
    EXPECT_TRUE(drain_back(r).empty());
}

TEST(RingReaderBackward, NeverWrittenZeroAreaEndsTheWalk) {
    // A reader attached to a ring whose head already moved (the space below 0 was never
    // written): the walk must stop at the zeroed space, not deliver zero-size records.
    FakeBackwardRing ring(256);
    ring.set_head(uint64_t(0) - 512);
    ring.write(PERF_RECORD_SAMPLE, 16, 7);
    ring.write(PERF_RECORD_SAMPLE, 24, 8);
    RingReader r = ring.reader();
    EXPECT_EQ(fills(drain_back(r)), (std::vector<int>{7, 8}));
}

TEST(RingReaderBackward, RecordWrappingTheEndIsContiguousAndAligned) {
    FakeBackwardRing ring(256);
    RingReader r = ring.reader();
    ring.set_head(uint64_t(0) - 240);  // offset 16: the next 48-byte record wraps
    EXPECT_TRUE(drain_back(r).empty());
    ring.write(PERF_RECORD_SAMPLE, 48, 0x5c);  // 32 bytes at the end, 16 at the start
    ring.write(PERF_RECORD_SAMPLE, 16, 0x11);
    EXPECT_EQ((ring.head() + 16) & 255, 224u);
    auto seen = drain_back(r);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].size, 48);
    EXPECT_EQ(fills(seen), (std::vector<int>{0x5c, 0x11}));
}

TEST(RingReaderBackward, FullyOverwrittenDeliversTheNewestBufferExactly) {
    FakeBackwardRing ring(256);
    for (int i = 0; i < 100; i++) ring.write(PERF_RECORD_SAMPLE, 16, uint8_t(i));
    RingReader r = ring.reader();
    std::vector<int> want;
    for (int i = 84; i < 100; i++) want.push_back(i);  // 16 records of 16 bytes fill 256
    EXPECT_EQ(fills(drain_back(r)), want);
}

TEST(RingReaderBackward, PartlyOverwrittenOldestRecordIsDropped) {
    FakeBackwardRing ring(256);
    // 24-byte records: 10 fit (240 bytes); the 11th from head is cut by the wrap.
    for (int i = 0; i < 50; i++) ring.write(PERF_RECORD_SAMPLE, 24, uint8_t(i));
    RingReader r = ring.reader();
    std::vector<int> want;
    for (int i = 40; i < 50; i++) want.push_back(i);
    EXPECT_EQ(fills(drain_back(r)), want);
}

TEST(RingReaderBackward, OverflowBetweenDrainsDeliversNoDuplicates) {
    FakeBackwardRing ring(256);
    RingReader r = ring.reader();
    ring.write(PERF_RECORD_SAMPLE, 16, 200);
    EXPECT_EQ(fills(drain_back(r)), (std::vector<int>{200}));
    // Exactly less than a buffer: only the new ones, the old one is not repeated.
    for (int i = 0; i < 15; i++) ring.write(PERF_RECORD_SAMPLE, 16, uint8_t(i));
    auto seen = fills(drain_back(r));
    ASSERT_EQ(seen.size(), 15u);
    EXPECT_EQ(seen.front(), 0);
    EXPECT_EQ(seen.back(), 14);
    // More than a buffer with mixed sizes: the newest that survived, in order.
    for (int i = 0; i < 40; i++) ring.write(PERF_RECORD_SAMPLE, i % 2 ? 16 : 32, uint8_t(100 + i));
    seen = fills(drain_back(r));
    // From the newest: 16,32,16,32,... bytes; 11 records = 256 bytes, the 12th does not fit.
    std::vector<int> want;
    for (int i = 29; i < 40; i++) want.push_back(100 + i);
    EXPECT_EQ(seen, want);
}

TEST(RingReaderBackward, CorruptSizeStopsTheWalkKeepingNewerRecords) {
    for (uint16_t bad : {uint16_t(0), uint16_t(4), uint16_t(12), uint16_t(0xfff8)}) {
        FakeBackwardRing ring(256);
        ring.write(PERF_RECORD_SAMPLE, 16, 1);
        std::vector<uint8_t> rec(16, 0xee);
        perf_event_header h{PERF_RECORD_SAMPLE, 0, bad};
        std::memcpy(rec.data(), &h, sizeof(h));
        ring.write_bytes(rec);
        ring.write(PERF_RECORD_SAMPLE, 16, 3);
        ring.write(PERF_RECORD_SAMPLE, 24, 4);
        RingReader r = ring.reader();
        EXPECT_EQ(fills(drain_back(r)), (std::vector<int>{3, 4})) << "size " << bad;
        EXPECT_TRUE(drain_back(r).empty());
    }
}

TEST(RingReaderBackward, RecordReachingIntoDeliveredDataIsCorrupt) {
    FakeBackwardRing ring(256);
    RingReader r = ring.reader();
    ring.write(PERF_RECORD_SAMPLE, 16, 1);
    EXPECT_EQ(drain_back(r).size(), 1u);
    // A 16-byte slot claiming 32 bytes would overlap the record delivered before.
    std::vector<uint8_t> rec(16, 0xee);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, 32};
    std::memcpy(rec.data(), &h, sizeof(h));
    ring.write_bytes(rec);
    EXPECT_TRUE(drain_back(r).empty());
}

TEST(RingReaderBackward, GarbageNeverReadsOutOfBoundsOrLoops) {
    // Random data and heads; run under ASan by `make sanitize`.
    uint64_t x = 0x9e3779b97f4a7c15ull;
    auto next = [&] {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        return x;
    };
    for (int round = 0; round < 2000; round++) {
        FakeBackwardRing ring(size_t(64) << (round % 4));
        for (size_t i = 0; i < ring.size(); i++) ring.data()[i] = uint8_t(next() % (round % 3 ? 256 : 40));
        RingReader r = ring.reader();
        for (int k = 0; k < 3; k++) {
            ring.set_head(k == 2 ? next() & ~uint64_t(7) : next());
            size_t bytes = 0;
            r.drain_backward([&](const perf_event_header& h) {
                EXPECT_GE(h.size, sizeof(h));
                EXPECT_EQ(h.size % 8, 0);
                bytes += h.size;
            });
            EXPECT_LE(bytes, ring.size());
        }
    }
}

// The kernel itself: a per-thread sys_enter_getpid tracepoint with write_backward=1.
namespace {

struct BackwardSample {
    uint32_t tid;
    uint64_t time;
};

std::vector<BackwardSample> drain_samples(MappedRing& ring, size_t& other) {
    std::vector<BackwardSample> out;
    ring.drain_backward([&](const perf_event_header& h) {
        if (h.type != PERF_RECORD_SAMPLE) {
            ++other;
            return;
        }
        const uint8_t* p = reinterpret_cast<const uint8_t*>(&h) + sizeof(h);
        uint32_t tid;
        uint64_t time;
        std::memcpy(&tid, p + 4, 4);
        std::memcpy(&time, p + 8, 8);
        out.push_back({tid, time});
    });
    return out;
}

}  // namespace

TEST(RingReaderBackward, KernelOverwriteRing) {
    int tp_id = 0;
    try {
        tp_id = std::stoi(
            perfprof::tep::read_file(perfprof::tep::tracefs_dir() + "/events/syscalls/sys_enter_getpid/id"));
    } catch (const std::exception& e) {
        GTEST_SKIP() << "no syscalls:sys_enter_getpid tracepoint: " << e.what();
    }
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.config = uint64_t(tp_id);
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;  // header + 8 + 8 = 24 bytes
    attr.disabled = 1;
    attr.write_backward = 1;
    int fd = int(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) GTEST_SKIP() << "perf_event_open: " << std::strerror(errno);
    perfprof::core::Fd owner(fd);
    MappedRing ring(fd, 1, true);
    EXPECT_TRUE(ring.backward());
    ASSERT_EQ(::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
    const uint32_t tid = uint32_t(::syscall(SYS_gettid));
    size_t other = 0;

    for (int i = 0; i < 10; i++) ::syscall(SYS_getpid);
    auto s = drain_samples(ring, other);
    ASSERT_EQ(s.size(), 10u);
    for (size_t i = 0; i < s.size(); i++) EXPECT_EQ(s[i].tid, tid);
    for (size_t i = 1; i < s.size(); i++) EXPECT_LT(s[i - 1].time, s[i].time);
    const uint64_t last = s.back().time;

    for (int i = 0; i < 5; i++) ::syscall(SYS_getpid);
    s = drain_samples(ring, other);
    ASSERT_EQ(s.size(), 5u);
    EXPECT_LT(last, s.front().time);
    for (size_t i = 1; i < s.size(); i++) EXPECT_LT(s[i - 1].time, s[i].time);

    // Overflow: only the newest buffer's worth survives, each record whole.
    const size_t per_buffer = ring.reader().data_size() / 24;
    for (size_t i = 0; i < per_buffer * 4 + 7; i++) ::syscall(SYS_getpid);
    s = drain_samples(ring, other);
    EXPECT_EQ(s.size(), per_buffer);
    for (size_t i = 1; i < s.size(); i++) EXPECT_LT(s[i - 1].time, s[i].time);
    EXPECT_EQ(other, 0u);  // pausing with nothing to write loses nothing
    EXPECT_TRUE(drain_samples(ring, other).empty());
}

TEST(RecordDecode, SampleFieldsInKernelOrder) {
    // TID TIME ID CPU PERIOD CALLCHAIN(2) RAW(12 bytes + 4 size, padded to 8)
    std::vector<uint64_t> body = {
        (uint64_t(42) << 32) | 41,  // pid 41, tid 42
        123456789,                  // time
        7,                          // id
        3,                          // cpu 3, res 0
        1,                          // period
        2,
        0xffffffff81000000ull,
        0x401000,
    };
    std::vector<uint8_t> rec(sizeof(perf_event_header) + body.size() * 8 + 16);
    std::memcpy(rec.data() + sizeof(perf_event_header), body.data(), body.size() * 8);
    uint8_t* raw = rec.data() + sizeof(perf_event_header) + body.size() * 8;
    uint32_t raw_size = 12;
    std::memcpy(raw, &raw_size, 4);
    std::memset(raw + 4, 0xab, 12);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, uint16_t(rec.size())};
    std::memcpy(rec.data(), &h, sizeof(h));
    const uint64_t st = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                        PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW;
    Sample s;
    ASSERT_TRUE(decode_sample(*reinterpret_cast<perf_event_header*>(rec.data()), st, s));
    EXPECT_EQ(s.pid, 41u);
    EXPECT_EQ(s.tid, 42u);
    EXPECT_EQ(s.time, 123456789u);
    EXPECT_EQ(s.id, 7u);
    EXPECT_EQ(s.cpu, 3u);
    EXPECT_EQ(s.period, 1u);
    ASSERT_EQ(s.callchain_nr, 2u);
    EXPECT_EQ(s.callchain[1], 0x401000u);
    EXPECT_EQ(s.raw_size, 12u);
    EXPECT_EQ(static_cast<const uint8_t*>(s.raw)[11], 0xab);
}

TEST(RecordDecode, TruncatedSampleIsRejected) {
    std::vector<uint64_t> rec(3, 0);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, 16};  // header + one u64
    std::memcpy(rec.data(), &h, sizeof(h));
    Sample s;
    EXPECT_FALSE(decode_sample(*reinterpret_cast<perf_event_header*>(rec.data()),
                               PERF_SAMPLE_TID | PERF_SAMPLE_TIME, s));
    // A raw size pointing past the end.
    std::vector<uint64_t> rec2 = {0, 0xffff};
    perf_event_header h2{PERF_RECORD_SAMPLE, 0, 16};
    std::memcpy(rec2.data(), &h2, sizeof(h2));
    EXPECT_FALSE(decode_sample(*reinterpret_cast<perf_event_header*>(rec2.data()), PERF_SAMPLE_RAW, s));
}

TEST(RecordDecode, SampleIdTrailerOfLostRecord) {
    // PERF_RECORD_LOST: id, lost, then TID TIME CPU trailer.
    std::vector<uint64_t> rec = {0, 9, 100, (uint64_t(5) << 32) | 4, 555, 1};
    perf_event_header h{PERF_RECORD_LOST, 0, uint16_t(rec.size() * 8)};
    std::memcpy(rec.data(), &h, sizeof(h));
    SampleId id;
    ASSERT_TRUE(decode_sample_id(*reinterpret_cast<perf_event_header*>(rec.data()),
                                 PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU, id));
    EXPECT_EQ(id.pid, 4u);
    EXPECT_EQ(id.tid, 5u);
    EXPECT_EQ(id.time, 555u);
    EXPECT_EQ(id.cpu, 1u);
}
