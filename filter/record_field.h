// An integer field of a tracepoint record, located by name once and then read per sample with
// no lookup (multi-trace's wake-up trick, its --detail tests and CPU tracking, the syscalls
// table). The expression engine (expr.h) reads fields the same way for EXPRs.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "filter/expr.h"

namespace perfprof::filter {

struct RecordField {
    uint32_t off = 0, size = 0;
    bool is_signed = false, ok = false;  // !ok: the record has no such field

    // The scalar integer field `name` (1, 2, 4 or 8 bytes; not an array, not a string).
    static RecordField integer(std::span<const Field> fields, std::string_view name) {
        for (const Field& f : fields)
            if (f.name == name && !f.is_dynamic && !f.is_array && !f.is_string &&
                (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8))
                return {f.offset, f.size, f.is_signed, true};
        return {};
    }
    // The fixed-size string field `name` (char[N]).
    static RecordField string(std::span<const Field> fields, std::string_view name) {
        for (const Field& f : fields)
            if (f.name == name && !f.is_dynamic && f.is_string) return {f.offset, f.size, false, true};
        return {};
    }

    // The integer in `raw`, sign- or zero-extended; false when absent or the record is short.
    bool read(const void* raw, size_t raw_size, int64_t& v) const {
        if (!ok || !raw || raw_size < size_t(off) + size) return false;
        const auto* p = static_cast<const uint8_t*>(raw) + off;
        switch (size) {
            case 1:
                v = is_signed ? int64_t(int8_t(p[0])) : int64_t(p[0]);
                return true;
            case 2: {
                uint16_t x;
                std::memcpy(&x, p, 2);
                v = is_signed ? int64_t(int16_t(x)) : int64_t(x);
                return true;
            }
            case 4: {
                uint32_t x;
                std::memcpy(&x, p, 4);
                v = is_signed ? int64_t(int32_t(x)) : int64_t(x);
                return true;
            }
            default:
                std::memcpy(&v, p, 8);
                return true;
        }
    }
    // The same, `otherwise` when it cannot be read.
    int64_t read_or(const void* raw, size_t raw_size, int64_t otherwise) const {
        int64_t v;
        return read(raw, raw_size, v) ? v : otherwise;
    }
};

}  // namespace perfprof::filter
