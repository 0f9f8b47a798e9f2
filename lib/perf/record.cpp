#include "perf/record.h"

#include <cstddef>

namespace perfprof::perf {

namespace {

class Cursor {
public:
    Cursor(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
    bool u64(uint64_t& v) {
        if (end_ - p_ < 8) return false;
        __builtin_memcpy(&v, p_, 8);
        p_ += 8;
        return true;
    }
    bool u32pair(uint32_t& a, uint32_t& b) {
        uint64_t v;
        if (!u64(v)) return false;
        a = static_cast<uint32_t>(v);
        b = static_cast<uint32_t>(v >> 32);
        return true;
    }
    bool skip(uint64_t n) {
        if (static_cast<uint64_t>(end_ - p_) < n) return false;
        p_ += n;
        return true;
    }
    const uint8_t* pos() const { return p_; }

private:
    const uint8_t* p_;
    const uint8_t* end_;
};

}  // namespace

namespace {

// PERF_SAMPLE_READ: how many words the read_format gives, or 0 when they do not fit.
bool read_words(Cursor& c, uint64_t read_format, Sample& s) {
    const uint8_t* at = c.pos();
    const uint64_t times = (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED ? 1 : 0) +
                           (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING ? 1 : 0);
    const uint64_t per = 1 + (read_format & PERF_FORMAT_ID ? 1 : 0) + (read_format & PERF_FORMAT_LOST ? 1 : 0);
    uint64_t n = 0;
    if (read_format & PERF_FORMAT_GROUP) {
        uint64_t nr = 0;
        if (!c.u64(nr) || nr > 4096) return false;
        n = 1 + times + nr * per;
        if (!c.skip((n - 1) * 8)) return false;
    } else {
        n = times + per;
        if (!c.skip(n * 8)) return false;
    }
    s.read = reinterpret_cast<const uint64_t*>(at);
    s.read_words = uint32_t(n);
    // The first counter value: after nr and the times in a group, first otherwise.
    __builtin_memcpy(&s.read_value, at + (read_format & PERF_FORMAT_GROUP ? (1 + times) * 8 : 0), 8);
    return true;
}

}  // namespace

bool decode_sample(const perf_event_header& h, const perf_event_attr& attr, Sample& s) {
    return decode_sample(h, attr.sample_type, s, attr.sample_regs_user, attr.read_format, attr.sample_regs_intr);
}

bool decode_sample(const perf_event_header& h, uint64_t st, Sample& s, uint64_t regs_user_mask, uint64_t read_format,
                   uint64_t regs_intr_mask) {
    const uint8_t* base = reinterpret_cast<const uint8_t*>(&h);
    Cursor c(base + sizeof(h), base + h.size);
    uint64_t v;
    uint32_t dummy;
    if ((st & PERF_SAMPLE_IDENTIFIER) && !c.u64(s.id)) return false;
    if ((st & PERF_SAMPLE_IP) && !c.u64(s.ip)) return false;
    if ((st & PERF_SAMPLE_TID) && !c.u32pair(s.pid, s.tid)) return false;
    if ((st & PERF_SAMPLE_TIME) && !c.u64(s.time)) return false;
    if ((st & PERF_SAMPLE_ADDR) && !c.u64(s.addr)) return false;
    if ((st & PERF_SAMPLE_ID) && !c.u64(s.id)) return false;
    if ((st & PERF_SAMPLE_STREAM_ID) && !c.u64(v)) return false;
    if ((st & PERF_SAMPLE_CPU) && !c.u32pair(s.cpu, dummy)) return false;
    if ((st & PERF_SAMPLE_PERIOD) && !c.u64(s.period)) return false;
    if ((st & PERF_SAMPLE_READ) && !read_words(c, read_format, s)) return false;
    if (st & PERF_SAMPLE_CALLCHAIN) {
        if (!c.u64(s.callchain_nr)) return false;
        if (s.callchain_nr > (h.size / 8)) return false;
        s.callchain = reinterpret_cast<const uint64_t*>(c.pos());
        if (!c.skip(s.callchain_nr * 8)) return false;
    }
    if (st & PERF_SAMPLE_RAW) {
        uint32_t size = 0;
        const uint8_t* p = c.pos();
        if (!c.skip(4)) return false;
        __builtin_memcpy(&size, p, 4);
        if (!c.skip(size)) return false;
        s.raw = p + 4;
        s.raw_size = size;
    }
    if (st & PERF_SAMPLE_BRANCH_STACK) return true;  // never planned: its layout depends on flags
    if (st & PERF_SAMPLE_REGS_USER) {
        if (!c.u64(s.user_abi)) return false;
        if (s.user_abi != PERF_SAMPLE_REGS_ABI_NONE) {
            s.user_regs = reinterpret_cast<const uint64_t*>(c.pos());
            if (!c.skip(uint64_t(__builtin_popcountll(regs_user_mask)) * 8)) return false;
        }
    }
    if (st & PERF_SAMPLE_STACK_USER) {
        // u64 size; char data[size]; u64 dyn_size (only when size != 0): dyn_size of the copy
        // is valid (the stack may be shallower than what was asked for).
        uint64_t size = 0;
        if (!c.u64(size)) return false;
        if (size) {
            const uint8_t* data = c.pos();
            uint64_t dyn = 0;
            if (!c.skip(size) || !c.u64(dyn)) return false;
            s.user_stack = data;
            s.user_stack_size = dyn < size ? dyn : size;
        }
    }
    if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT) && !c.skip(8)) return false;
    if ((st & PERF_SAMPLE_DATA_SRC) && !c.skip(8)) return false;
    if ((st & PERF_SAMPLE_TRANSACTION) && !c.skip(8)) return false;
    if (st & PERF_SAMPLE_REGS_INTR) {
        if (!c.u64(s.intr_abi)) return false;
        if (s.intr_abi != PERF_SAMPLE_REGS_ABI_NONE) {
            s.intr_regs = reinterpret_cast<const uint64_t*>(c.pos());
            if (!c.skip(uint64_t(__builtin_popcountll(regs_intr_mask)) * 8)) return false;
        }
    }
    return true;
}

bool decode_sample_id(const perf_event_header& h, uint64_t st, SampleId& id) {
    // The trailer is packed at the end of the record, in this order.
    std::size_t n = 0;
    n += (st & PERF_SAMPLE_TID) ? 8 : 0;
    n += (st & PERF_SAMPLE_TIME) ? 8 : 0;
    n += (st & PERF_SAMPLE_ID) ? 8 : 0;
    n += (st & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
    n += (st & PERF_SAMPLE_CPU) ? 8 : 0;
    n += (st & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
    if (h.size < sizeof(h) + n) return false;
    const uint8_t* base = reinterpret_cast<const uint8_t*>(&h);
    Cursor c(base + h.size - n, base + h.size);
    uint64_t v;
    uint32_t dummy;
    if ((st & PERF_SAMPLE_TID) && !c.u32pair(id.pid, id.tid)) return false;
    if ((st & PERF_SAMPLE_TIME) && !c.u64(id.time)) return false;
    if ((st & PERF_SAMPLE_ID) && !c.u64(id.id)) return false;
    if ((st & PERF_SAMPLE_STREAM_ID) && !c.u64(v)) return false;
    if ((st & PERF_SAMPLE_CPU) && !c.u32pair(id.cpu, dummy)) return false;
    if ((st & PERF_SAMPLE_IDENTIFIER) && !c.u64(id.id)) return false;
    return true;
}

}  // namespace perfprof::perf
