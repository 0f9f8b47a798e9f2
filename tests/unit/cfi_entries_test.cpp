// lib/unwind/cfi_entries: the reader of a call-frame section's encodings and the headers of its
// entries, on hand-built bytes (the compiled rows are cfi_program_test's).
#include "unwind/cfi_entries.h"

#include <gtest/gtest.h>

#include <string>

namespace perfprof::unwind::cfi {
namespace {

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s += char(c);
    return s;
}

TEST(CfiReader, Leb128) {
    const std::string s = bytes({0xe5, 0x8e, 0x26, 0xc0, 0xbb, 0x78});
    Reader r(s, 0, 0, s.size());
    EXPECT_EQ(r.uleb(), 624485u);
    EXPECT_EQ(r.sleb(), -123456);
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r.at_end());
}

TEST(CfiReader, PastTheEndFails) {
    const std::string s = bytes({0x01, 0x02, 0x80});
    Reader r(s, 0, 0, s.size());
    EXPECT_EQ(r.fixed(2), 0x0201u);
    EXPECT_EQ(r.uleb(), 0u);  // a continuation byte with nothing after it
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.u8(), 0u);  // and every read after that
}

TEST(CfiReader, PcRelativePointer) {
    // sdata4 -16 at section offset 4 of a section at 0x1000: 0x1004 - 16.
    const std::string s = bytes({0, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff});
    Reader r(s, 0x1000, 4, s.size());
    EXPECT_EQ(r.pointer(kPePcrel | kPeSdata4), 0x1004u - 16);
    EXPECT_TRUE(r.ok());
}

// A .eh_frame CIE "zR", code alignment 1, data alignment -8, return address column 16, FDE
// pointers pcrel|sdata4; then DW_CFA_def_cfa rsp+8, DW_CFA_offset r16 at cfa-8, two nops.
const std::string kCie = bytes({0x14, 0,    0,    0,    0,    0,    0,    0,    1,    'z',  'R', 0,
                                0x01, 0x78, 0x10, 0x01, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0,   0});

TEST(CfiEntries, EhFrameCie) {
    Entry e;
    ASSERT_TRUE(read_entry(kCie, FrameSection::EhFrame, 0, e));
    EXPECT_TRUE(e.is_cie);
    EXPECT_EQ(e.start, 0u);
    EXPECT_EQ(e.end, kCie.size());
    EXPECT_EQ(e.id_pos, 4u);
    EXPECT_EQ(e.id_size, 4u);
    const ParsedCie c = parse_cie(kCie, 0, FrameSection::EhFrame, e);
    ASSERT_TRUE(c.valid);
    EXPECT_TRUE(c.augmented);
    EXPECT_EQ(c.code_align, 1u);
    EXPECT_EQ(c.data_align, -8);
    EXPECT_EQ(c.ra, 16u);
    EXPECT_EQ(c.fde_enc, kPePcrel | kPeSdata4);
    EXPECT_FALSE(c.signal);
    EXPECT_EQ(c.insns, 17u);
    EXPECT_EQ(c.insns_end, kCie.size());
}

TEST(CfiEntries, Malformed) {
    Entry e;
    // A length beyond the section, and a zero length (the end of .eh_frame).
    EXPECT_FALSE(read_entry(bytes({0x40, 0, 0, 0, 0, 0, 0, 0}), FrameSection::EhFrame, 0, e));
    EXPECT_FALSE(read_entry(bytes({0, 0, 0, 0}), FrameSection::EhFrame, 0, e));
    // An augmentation we cannot skip ("eh", an old GCC's) and a version we do not know.
    std::string eh = kCie;
    eh[9] = 'e';
    eh[10] = 'h';
    ASSERT_TRUE(read_entry(eh, FrameSection::EhFrame, 0, e));
    EXPECT_FALSE(parse_cie(eh, 0, FrameSection::EhFrame, e).valid);
    std::string v2 = kCie;
    v2[8] = 2;
    EXPECT_FALSE(parse_cie(v2, 0, FrameSection::EhFrame, e).valid);
}

}  // namespace
}  // namespace perfprof::unwind::cfi
