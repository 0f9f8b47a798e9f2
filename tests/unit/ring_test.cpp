// RingReader and record decoding, on synthetic ring buffers laid out like the kernel's.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perf/record.h"
#include "perf/ring.h"

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
