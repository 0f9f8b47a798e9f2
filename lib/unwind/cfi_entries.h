// Reading the entries of a call-frame section (.eh_frame, .debug_frame): a bounds-checked
// reader of its encodings (LEB128, DW_EH_PE_* pointers), the header of each entry (CIE or FDE),
// and what an FDE needs of its CIE. Used by CfiTable::build (the index) and CfiProgram (the
// programs); inline where the programs' interpreter reads every byte.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "unwind/cfi_table.h"

namespace perfprof::unwind::cfi {

// Pointer encodings (DW_EH_PE_*).
// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeAbsptr = 0x00, kPeUleb = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
                  kPeSleb = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c;
constexpr uint8_t kPePcrel = 0x10;

// Bounds-checked reading of one section. A read past the end sets !ok() and returns 0.
class Reader {
public:
    Reader(std::string_view bytes, uint64_t addr, size_t pos, size_t end)
        : data_(reinterpret_cast<const uint8_t*>(bytes.data())),
          addr_(addr),
          pos_(pos),
          end_(std::min(end, bytes.size())) {}

    bool ok() const { return ok_; }
    size_t pos() const { return pos_; }
    size_t end() const { return end_; }
    bool at_end() const { return pos_ >= end_; }
    void seek(size_t p) { pos_ = p; }

    uint64_t fixed(size_t n) {
        if (!ok_ || pos_ > end_ || end_ - pos_ < n) return fail();
        uint64_t v = 0;
        std::memcpy(&v, data_ + pos_, n);  // little-endian host and file (x86-64)
        pos_ += n;
        return v;
    }
    uint8_t u8() { return uint8_t(fixed(1)); }
    uint64_t uleb() {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!ok_ || pos_ >= end_) return fail();
            const uint8_t b = data_[pos_++];
            if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
    }
    int64_t sleb() {
        uint64_t v = 0;
        unsigned shift = 0;
        uint8_t b;
        do {
            if (!ok_ || pos_ >= end_) return int64_t(fail());
            b = data_[pos_++];
            if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40)) v |= ~uint64_t(0) << shift;
        return int64_t(v);
    }
    bool skip(uint64_t n) {
        if (!ok_ || pos_ > end_ || n > end_ - pos_) return fail(), false;
        pos_ += size_t(n);
        return true;
    }
    // A DW_EH_PE_* encoded pointer; `with_base` false for an FDE's range (a length: the
    // application bits do not apply).
    uint64_t pointer(uint8_t enc, bool with_base = true) {
        const uint64_t field = addr_ + pos_;
        uint64_t v;
        switch (enc & 0x0f) {
            case kPeAbsptr:
            case kPeUdata8:
            case kPeSdata8:
                v = fixed(8);
                break;
            case kPeUleb:
                v = uleb();
                break;
            case kPeSleb:
                v = uint64_t(sleb());
                break;
            case kPeUdata2:
                v = fixed(2);
                break;
            case kPeSdata2:
                v = uint64_t(int64_t(int16_t(fixed(2))));
                break;
            case kPeUdata4:
                v = fixed(4);
                break;
            case kPeSdata4:
                v = uint64_t(int64_t(int32_t(fixed(4))));
                break;
            default:
                return fail();
        }
        if (!with_base) return v;
        switch (enc & 0x70) {
            case 0:
                return v;
            case kPePcrel:
                return v + field;
            default:  // text-, data-, function-relative, aligned: not used for x86-64 FDEs
                return fail();
        }
    }
    std::span<const uint8_t> block(uint64_t n) {
        const size_t at = pos_;
        if (!skip(n)) return {};
        return {data_ + at, size_t(n)};
    }

private:
    uint64_t fail() {
        ok_ = false;
        return 0;
    }
    const uint8_t* data_;
    uint64_t addr_;
    size_t pos_, end_;
    bool ok_ = true;
};

// One entry's header: the length and where it ends, the CIE id / pointer field.
struct Entry {
    size_t start, end;
    uint64_t id;
    size_t id_pos;
    size_t id_size;  // 4, or 8 in a 64-bit .debug_frame
    bool is_cie;
};

// The header of the entry at `off`; false where it is truncated or malformed.
bool read_entry(std::string_view bytes, FrameSection::Kind kind, size_t off, Entry& e);

// What an FDE needs of its CIE; `valid` false for one we cannot use.
struct ParsedCie {
    bool valid = false;
    bool augmented = false;  // 'z': FDEs have augmentation data to skip
    uint64_t code_align = 1;
    int64_t data_align = -8;
    uint64_t ra = kRa;
    uint8_t fde_enc = kPeAbsptr;
    bool signal = false;
    size_t insns = 0, insns_end = 0;
};

ParsedCie parse_cie(std::string_view bytes, uint64_t addr, FrameSection::Kind kind, const Entry& e);

}  // namespace perfprof::unwind::cfi
