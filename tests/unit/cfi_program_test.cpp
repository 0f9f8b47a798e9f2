// lib/unwind/cfi_program: an FDE's call-frame program compiled into the rows of its CfiTable, on
// hand-built sections: the CFA instructions (advances, remember / restore state, the register
// rules, CFA expressions), signal frames and factored offsets that do not fit.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cfi_frames.h"
#include "unwind/cfi_table.h"

namespace perfprof::unwind {
namespace {

TEST(CfiTableBuild, PrologueRememberRestore) {
    const uint64_t sec = 0x402000, fn = 0x401000;  // .text before .eh_frame: negative pc offsets
    Frames f(FrameSection::EhFrame, sec);
    const size_t cie = f.cie("zR", kCieInsns);
    f.fde(cie, fn, 16, prologue_insns());
    CfiTable t = f.build();
    EXPECT_EQ(t.fde_count(), 1u);
    EXPECT_EQ(t.skipped(), 0u);
    EXPECT_EQ(ours_at(t, fn - 1), "none");
    EXPECT_EQ(ours_at(t, fn), "cfa=r7+8 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, fn + 1), "cfa=r7+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 3), "cfa=r7+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 4), "cfa=r6+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 7), "cfa=r6+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 8), "cfa=r7+8 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 9), "cfa=r6+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 15), "cfa=r6+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, fn + 16), "none");
    EXPECT_EQ(t.find(0), nullptr);
    EXPECT_EQ(t.find(~uint64_t(0)), nullptr);
    EXPECT_EQ(t.find(sec), nullptr);
    const Row* r = t.find(fn + 5);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->flags, 0);
    EXPECT_LE(r->pc, fn + 5);
}

TEST(CfiTableBuild, RegisterRules) {
    Frames f(FrameSection::EhFrame, 0x1000);
    const size_t cie = f.cie("zR", kCieInsns);
    // +0: rbx in rbp (DW_CFA_register); +2: rbp = CFA - 32 (val_offset, factored -8 * 4); +4: rbx
    // undefined, rbp same; +6: rbp restored to the CIE's rule (none: same value); +8: rbx saved at
    // the address an expression computes.
    f.fde(cie, 0x3000, 0x20,
          {kRegister,
           3,
           6,
           kAdvance | 2,
           kValOffset,
           6,
           4,
           kAdvance | 2,
           kUndefined,
           3,
           kSameValue,
           6,
           kAdvance | 2,
           kRestore | 6,
           kAdvance | 2,
           kExpression,
           3,
           2,
           0x77,
           0x10});
    CfiTable t = f.build();
    EXPECT_EQ(t.skipped(), 0u);
    EXPECT_EQ(ours_at(t, 0x3000), "cfa=r7+8 ra=offset-8 rbp=same rbx=reg6");
    EXPECT_EQ(ours_at(t, 0x3002), "cfa=r7+8 ra=offset-8 rbp=val_offset-32 rbx=reg6");
    EXPECT_EQ(ours_at(t, 0x3004), "cfa=r7+8 ra=offset-8 rbp=same rbx=undef");
    EXPECT_EQ(ours_at(t, 0x3006), "cfa=r7+8 ra=offset-8 rbp=same rbx=undef");
    EXPECT_EQ(ours_at(t, 0x3008), "cfa=r7+8 ra=offset-8 rbp=same rbx=expr:77");
    const Row* r = t.find(0x3009);
    ASSERT_NE(r, nullptr);
    for (const RegRule& x : t.rules(*r)) {
        EXPECT_LT(x.reg, kRegs);
        EXPECT_NE(x.kind, RuleKind::SameValue);  // nrules counts the others only
        if (x.reg == kRbx) {
            auto e = t.expression(x.value);
            EXPECT_EQ(std::vector<uint8_t>(e.begin(), e.end()), (std::vector<uint8_t>{0x77, 0x10}));
        }
    }
}

TEST(CfiTableBuild, PltCfaExpression) {
    Frames f(FrameSection::EhFrame, 0x2000);
    const size_t cie = f.cie("zR", kCieInsns);
    std::vector<uint8_t> insns = {
        kDefCfaOffset,           16, kAdvance | 6, kDefCfaOffset, 24, kAdvance | 10, kDefCfaExpression,
        uint8_t(kPltExpr.size())};
    insns.insert(insns.end(), kPltExpr.begin(), kPltExpr.end());
    f.fde(cie, 0x1020, 0x40, insns);
    CfiTable t = f.build();
    EXPECT_EQ(ours_at(t, 0x1020), "cfa=r7+16 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x1026), "cfa=r7+24 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x1030), "cfa=expr:77 ra=offset-8 rbp=same rbx=same");
    const Row* r = t.find(0x105f);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->cfa_kind, CfaKind::Expression);
    auto e = t.expression(r->cfa_offset);
    EXPECT_EQ(std::vector<uint8_t>(e.begin(), e.end()), kPltExpr);
    EXPECT_EQ(t.find(0x1060), nullptr);
    EXPECT_TRUE(t.expression(-1).empty());
    EXPECT_TRUE(t.expression(1 << 30).empty());
}

TEST(CfiTableBuild, SignalFrame) {
    Frames f(FrameSection::EhFrame, 0x1000);
    const size_t plain = f.cie("zR", kCieInsns);
    const size_t sig = f.cie("zRS", {kDefCfaExpression, 3, 0x77, 0xa0, 0x01});  // breg7 160
    f.fde(plain, 0x2000, 0x10, {});
    f.fde(sig, 0x1ff0, 0x10, {});
    CfiTable t = f.build();
    ASSERT_NE(t.find(0x1ff5), nullptr);
    EXPECT_TRUE(t.find(0x1ff5)->flags & kSignalFrame);
    EXPECT_EQ(t.find(0x1ff5)->cfa_kind, CfaKind::Expression);
    ASSERT_NE(t.find(0x2000), nullptr);
    EXPECT_FALSE(t.find(0x2000)->flags & kSignalFrame);
}

TEST(CfiTableBuild, LargeAdvances) {
    // DW_CFA_advance_loc1/2/4 and set_loc-free programs reaching far into a long function.
    Frames f(FrameSection::EhFrame, 0x1000);
    const size_t cie = f.cie("zR", kCieInsns);
    f.fde(cie, 0x10000, 0x30000,
          {kAdvanceLoc1, 200, kDefCfaOffset, 16, 0x03, 0x00, 0x10, kDefCfaOffset, 24,  // +200, +200+4096
           0x04, 0x00, 0x00, 0x01, 0x00, kDefCfaOffset, 32});                          // +65536 more
    CfiTable t = f.build();
    EXPECT_EQ(ours_at(t, 0x10000 + 199), "cfa=r7+8 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x10000 + 200), "cfa=r7+16 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x10000 + 200 + 4096), "cfa=r7+24 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x10000 + 200 + 4096 + 65536), "cfa=r7+32 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x40000 - 1), "cfa=r7+32 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x40000), "none");
}

TEST(CfiTableBuild, HugeFactoredOffsets) {
    // A factored offset times the data alignment (-8) that does not fit: 2^61 * -8 is -2^64,
    // which wraps to 0 in 64 bits (and is undefined behaviour in a signed multiplication). The
    // FDE is malformed; it must not read as "saved at CFA + 0".
    const std::vector<uint8_t> two61 = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20};  // ULEB 2^61
    const std::vector<uint8_t> minus61 = {0x80, 0x80, 0x80, 0x80, 0x80,
                                          0x80, 0x80, 0x80, 0x60};  // SLEB -2^61
    auto with = [](std::vector<uint8_t> head, const std::vector<uint8_t>& tail) {
        head.insert(head.end(), tail.begin(), tail.end());
        return head;
    };
    const std::vector<std::vector<uint8_t>> programs = {
        with({kAdvance | 1, kOffset | 6}, two61),    // DW_CFA_offset
        with({kAdvance | 1, 0x05, 6}, two61),        // DW_CFA_offset_extended
        with({kAdvance | 1, 0x11, 6}, minus61),      // DW_CFA_offset_extended_sf
        with({kAdvance | 1, 0x12, 7}, minus61),      // DW_CFA_def_cfa_sf
        with({kAdvance | 1, 0x13}, minus61),         // DW_CFA_def_cfa_offset_sf
        with({kAdvance | 1, kValOffset, 6}, two61),  // DW_CFA_val_offset
        with({kAdvance | 1, 0x15, 6}, minus61),      // DW_CFA_val_offset_sf
        with({kAdvance | 1, 0x2f, 6}, two61),        // DW_CFA_GNU_negative_offset_extended
    };
    for (size_t i = 0; i < programs.size(); i++) {
        Frames f(FrameSection::EhFrame, 0x1000);
        f.fde(f.cie("zR", kCieInsns), 0x3000, 0x10, programs[i]);
        CfiTable t = f.build();
        EXPECT_EQ(t.find(0x3001), nullptr) << "program " << i << ": " << ours_at(t, 0x3001);
    }
}

}  // namespace
}  // namespace perfprof::unwind
