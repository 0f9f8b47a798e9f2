// A write-only protobuf encoder (the wire format only: varints, 64-bit little-endian,
// length-delimited fields), enough for pprof's profile.proto without libprotobuf and generated
// code. Fields are appended in the order they are written; a nested message is built in a
// writer of its own and appended whole with message(), so every length is known when written
// and every varint is in its shortest form.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace perfprof::output {

class ProtoWriter {
public:
    enum class Wire : uint32_t { Varint = 0, Fixed64 = 1, Len = 2, Fixed32 = 5 };

    // A bare varint (LEB128, 7 bits a byte, low group first): 1 to 10 bytes.
    void varint(uint64_t v);
    void tag(uint32_t field, Wire w) { varint(uint64_t(field) << 3 | uint32_t(w)); }

    // Scalar fields, always written (proto3 leaves zeros out: see the *_nz forms). int64 is
    // two's complement (a negative value takes 10 bytes), as proto's int64, not zigzag sint64.
    void uint64(uint32_t field, uint64_t v);
    void int64(uint32_t field, int64_t v) { uint64(field, uint64_t(v)); }
    void boolean(uint32_t field, bool v) { uint64(field, v ? 1 : 0); }
    // The same, left out when zero (proto3's default value).
    void uint64_nz(uint32_t field, uint64_t v) {
        if (v) uint64(field, v);
    }
    void int64_nz(uint32_t field, int64_t v) {
        if (v) int64(field, v);
    }

    // A string or bytes field (written even when empty: a repeated string needs its "").
    void bytes(uint32_t field, std::string_view v);
    // A nested message: its encoding, length-prefixed.
    void message(uint32_t field, const ProtoWriter& m) { bytes(field, m.data()); }
    // Repeated scalars in packed form (one length-delimited field); nothing when empty.
    void packed_uint64(uint32_t field, std::span<const uint64_t> v);
    void packed_int64(uint32_t field, std::span<const int64_t> v);

    const std::string& data() const { return buf_; }
    size_t size() const { return buf_.size(); }
    void clear() { buf_.clear(); }

    // Bytes of v as a varint.
    static size_t varint_size(uint64_t v);

private:
    std::string buf_;
};

}  // namespace perfprof::output
