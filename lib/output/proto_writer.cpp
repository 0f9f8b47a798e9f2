#include "output/proto_writer.h"

namespace perfprof::output {

size_t ProtoWriter::varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}

void ProtoWriter::varint(uint64_t v) {
    char b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = char(uint8_t(v) | 0x80);
        v >>= 7;
    }
    b[n++] = char(v);
    buf_.append(b, n);
}

void ProtoWriter::uint64(uint32_t field, uint64_t v) {
    tag(field, Wire::Varint);
    varint(v);
}

void ProtoWriter::bytes(uint32_t field, std::string_view v) {
    tag(field, Wire::Len);
    varint(v.size());
    buf_.append(v);
}

void ProtoWriter::packed_uint64(uint32_t field, std::span<const uint64_t> v) {
    if (v.empty()) return;
    size_t len = 0;
    for (uint64_t x : v) len += varint_size(x);
    tag(field, Wire::Len);
    varint(len);
    for (uint64_t x : v) varint(x);
}

void ProtoWriter::packed_int64(uint32_t field, std::span<const int64_t> v) {
    // Signed and unsigned variants of a type may alias: the same bits, encoded alike.
    packed_uint64(field, {reinterpret_cast<const uint64_t*>(v.data()), v.size()});
}

}  // namespace perfprof::output
