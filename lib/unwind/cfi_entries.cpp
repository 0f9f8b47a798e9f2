// The entries of a call-frame section (unwind/cfi_entries.h): DWARF 5 §6.4.1, and the .eh_frame
// variant as in the LSB (CIE pointers relative to the field, augmentation strings).
#include "unwind/cfi_entries.h"

#include <string>

namespace perfprof::unwind::cfi {

bool read_entry(std::string_view bytes, FrameSection::Kind kind, size_t off, Entry& e) {
    Reader r(bytes, 0, off, bytes.size());
    uint64_t len = r.fixed(4);
    bool dwarf64 = false;
    if (len == 0xffffffff) {
        len = r.fixed(8);
        dwarf64 = true;
    }
    if (!r.ok() || len == 0 || len > bytes.size() - r.pos()) return false;
    e.start = off;
    e.end = r.pos() + size_t(len);
    e.id_pos = r.pos();
    // .eh_frame's CIE pointer is 4 bytes even after a 64-bit length.
    e.id_size = dwarf64 && kind == FrameSection::DebugFrame ? 8 : 4;
    e.id = r.fixed(e.id_size);
    if (!r.ok() || r.pos() > e.end) return false;
    if (kind == FrameSection::EhFrame)
        e.is_cie = e.id == 0;
    else
        e.is_cie = e.id_size == 8 ? e.id == ~uint64_t(0) : e.id == 0xffffffff;
    return true;
}

ParsedCie parse_cie(std::string_view bytes, uint64_t addr, FrameSection::Kind kind, const Entry& e) {
    ParsedCie c;
    Reader r(bytes, addr, e.id_pos + e.id_size, e.end);
    const uint8_t version = r.u8();
    if (version != 1 && version != 3 && version != 4) return c;
    std::string_view aug;
    {
        const size_t at = r.pos();
        while (r.ok() && r.u8() != 0) {
        }
        if (!r.ok()) return c;
        aug = bytes.substr(at, r.pos() - at - 1);
    }
    // "eh" (an old GCC's pointer) is not supported, nor anything we cannot skip.
    if (!aug.empty() && aug[0] != 'z') return c;
    uint8_t address_size = 8;
    if (version == 4) {
        address_size = r.u8();
        r.u8();  // segment selector size
    }
    c.code_align = r.uleb();
    c.data_align = r.sleb();
    c.ra = version == 1 ? r.u8() : r.uleb();
    if (kind == FrameSection::DebugFrame) c.fde_enc = address_size == 4 ? kPeUdata4 : kPeAbsptr;
    if (!aug.empty()) {
        c.augmented = true;
        const uint64_t n = r.uleb();
        if (!r.ok() || n > e.end - r.pos()) return c;
        const size_t data_end = r.pos() + size_t(n);
        for (char a : aug.substr(1)) {
            if (a == 'R') {
                c.fde_enc = r.u8();
            } else if (a == 'L') {
                r.u8();  // LSDA encoding: the FDE's augmentation data is skipped whole
            } else if (a == 'P') {
                const uint8_t enc = r.u8();
                r.pointer(enc & 0x7f, false);  // the personality routine: not needed
            } else if (a == 'S') {
                c.signal = true;
            } else if (a != 'B' && a != 'G') {  // AArch64 BTI and MTE carry no data
                break;                          // unknown: the length lets us skip the rest of the data
            }
        }
        if (!r.ok() || r.pos() > data_end) return c;
        r.seek(data_end);
    }
    if (!r.ok() || r.pos() > e.end || c.ra >= kRegs || c.code_align == 0) return c;
    c.insns = r.pos();
    c.insns_end = e.end;
    c.valid = true;
    return c;
}

}  // namespace perfprof::unwind::cfi
