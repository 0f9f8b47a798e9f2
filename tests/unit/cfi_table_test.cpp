// lib/unwind/cfi_table: the index of FDEs and its lookups on hand-built sections: the pointer
// encodings, .debug_frame, the section priority, empty and malformed input. The rows checked
// against libdw on real objects are cfi_table_libdw_test's; the CFA instructions
// cfi_program_test's.
#include "unwind/cfi_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cfi_frames.h"

namespace perfprof::unwind {
namespace {

TEST(CfiTableBuild, PointerEncodings) {
    // pcrel sdata4 with the function after the section, udata4, absolute udata8, and a CIE
    // without augmentation (absolute 8-byte pointers): each FDE lands at its own pc.
    struct Case {
        const char* aug;
        uint8_t enc;
        uint64_t sec, pc;
    };
    for (const Case& c : {Case{"zR", 0x1b, 0x1000, 0x7fff0}, Case{"zR", 0x1b, 0x9000, 0x1100},
                          Case{"zR", 0x03, 0x4000, 0x2340}, Case{"zR", 0x04, 0x4000, 0x7f0000001000},
                          Case{"", 0, 0x4000, 0x5000}}) {
        SCOPED_TRACE(std::string(c.aug) + " " + std::to_string(c.enc));
        Frames f(FrameSection::EhFrame, c.sec);
        const size_t cie = f.cie(c.aug, kCieInsns, c.enc);
        f.fde(cie, c.pc + 0x40, 8, {kAdvance | 4, kDefCfaOffset, 16});  // a second FDE first: order
        f.fde(cie, c.pc, 8, {kAdvance | 1, kDefCfaOffset, 16});
        CfiTable t = f.build();
        EXPECT_EQ(t.fde_count(), 2u);
        EXPECT_EQ(ours_at(t, c.pc - 1), "none");
        EXPECT_EQ(ours_at(t, c.pc), "cfa=r7+8 ra=offset-8 rbp=same rbx=same");
        EXPECT_EQ(ours_at(t, c.pc + 1), "cfa=r7+16 ra=offset-8 rbp=same rbx=same");
        EXPECT_EQ(ours_at(t, c.pc + 8), "none");
        EXPECT_EQ(ours_at(t, c.pc + 0x44), "cfa=r7+16 ra=offset-8 rbp=same rbx=same");
    }
}

TEST(CfiTableBuild, DebugFrame) {
    Frames f(FrameSection::DebugFrame, 0);
    const size_t cie = f.cie("", kCieInsns);
    f.fde(cie, 0x401000, 16, prologue_insns());
    CfiTable t = f.build();
    EXPECT_EQ(t.fde_count(), 1u);
    EXPECT_EQ(ours_at(t, 0x401000), "cfa=r7+8 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x401009), "cfa=r6+16 ra=offset-8 rbp=offset-16 rbx=same");
    EXPECT_EQ(ours_at(t, 0x401010), "none");
}

TEST(CfiTableBuild, SectionPriority) {
    // .eh_frame covers [0x1000, 0x1010); .debug_frame has an FDE overlapping it (left out) and one
    // elsewhere (kept).
    Frames eh(FrameSection::EhFrame, 0x8000);
    eh.fde(eh.cie("zR", kCieInsns), 0x1000, 0x10, {kDefCfaOffset, 16});
    Frames dbg(FrameSection::DebugFrame, 0);
    const size_t cie = dbg.cie("", kCieInsns);
    dbg.fde(cie, 0x1008, 0x10, {kDefCfaOffset, 32});
    dbg.fde(cie, 0x2000, 0x10, {kDefCfaOffset, 48});
    const FrameSection both[] = {eh.section(), dbg.section()};
    CfiTable t = CfiTable::build(both);
    EXPECT_EQ(ours_at(t, 0x1008), "cfa=r7+16 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(t, 0x1014), "none");
    EXPECT_EQ(ours_at(t, 0x2004), "cfa=r7+48 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(t.fde_count(), 2u);
    // The other way round, .debug_frame's FDE wins.
    const FrameSection reversed[] = {dbg.section(), eh.section()};
    CfiTable u = CfiTable::build(reversed);
    EXPECT_EQ(ours_at(u, 0x1008), "cfa=r7+32 ra=offset-8 rbp=same rbx=same");
    EXPECT_EQ(ours_at(u, 0x1004), "none");
}

TEST(CfiTableBuild, EmptyAndTerminated) {
    EXPECT_TRUE(CfiTable::build({}).empty());
    EXPECT_EQ(CfiTable().find(0x1000), nullptr);
    // A zero length ends .eh_frame (crtend's terminator); whether anything after it is read is
    // the table's business, but what comes before it is kept.
    Frames f(FrameSection::EhFrame, 0x1000);
    f.fde(f.cie("zR", kCieInsns), 0x3000, 0x10, {});
    f.bytes().insert(f.bytes().end(), {0, 0, 0, 0});
    CfiTable t = f.build();
    EXPECT_NE(t.find(0x3000), nullptr);
    EXPECT_EQ(t.fde_count(), 1u);
}

TEST(CfiTableBuild, MalformedIsSkipped) {
    Frames f(FrameSection::EhFrame, 0x1000);
    const size_t cie = f.cie("zR", kCieInsns);
    f.fde(cie, 0x3000, 0x10, {kAdvance | 1, kDefCfaOffset, 16});
    const size_t second = f.fde(cie, 0x4000, 0x10, {kAdvance | 1, kDefCfaOffset, 16});
    const std::vector<uint8_t> whole = f.bytes();
    CfiTable ok = f.build();
    ASSERT_EQ(ok.fde_count(), 2u);

    // Cut at every length: never a crash; the first FDE survives any cut past its end, and a cut
    // inside the second FDE's body is counted.
    for (size_t n = 0; n <= whole.size(); n++) {
        std::vector<uint8_t> cut(whole.begin(), whole.begin() + n);
        const FrameSection s{FrameSection::EhFrame, cut.data(), cut.size(), 0x1000};
        CfiTable t = CfiTable::build({&s, 1});
        if (n >= second) {
            EXPECT_EQ(ours_at(t, 0x3001), "cfa=r7+16 ra=offset-8 rbp=same rbx=same") << n;
        }
        if (n < whole.size()) {
            EXPECT_EQ(t.find(0x4001), nullptr) << n;
        }
        if (n > second + 4 && n < whole.size()) {
            EXPECT_GT(t.skipped(), 0u) << n;
        }
    }

    // An FDE whose CIE pointer points outside the section, or at itself.
    for (uint32_t bad : {uint32_t(0x7fffffff), uint32_t(4), uint32_t(second + 4 + 1)}) {
        std::vector<uint8_t> b = whole;
        std::memcpy(b.data() + second + 4, &bad, 4);
        const FrameSection s{FrameSection::EhFrame, b.data(), b.size(), 0x1000};
        CfiTable t = CfiTable::build({&s, 1});
        EXPECT_NE(t.find(0x3001), nullptr);
        EXPECT_EQ(t.find(0x4001), nullptr);
        EXPECT_GT(t.skipped(), 0u);
    }

    // A length running past the end of the section.
    {
        std::vector<uint8_t> b = whole;
        const uint32_t huge = 0xfffffff0;
        std::memcpy(b.data() + second, &huge, 4);
        const FrameSection s{FrameSection::EhFrame, b.data(), b.size(), 0x1000};
        CfiTable t = CfiTable::build({&s, 1});
        EXPECT_NE(t.find(0x3001), nullptr);
        EXPECT_EQ(t.find(0x4001), nullptr);
    }

    // An unknown CFA opcode (0x3c, between DW_CFA_val_expression and DW_CFA_lo_user): its FDE is
    // counted when its program first runs (at the first lookup in its range), and left out.
    {
        Frames g(FrameSection::EhFrame, 0x1000);
        const size_t c = g.cie("zR", kCieInsns);
        g.fde(c, 0x3000, 0x10, {kAdvance | 1, 0x3c, 1, 2, 3});
        g.fde(c, 0x4000, 0x10, {kAdvance | 1, kDefCfaOffset, 16});
        CfiTable t = g.build();
        EXPECT_EQ(t.find(0x3000), nullptr);
        EXPECT_EQ(t.find(0x3001), nullptr);
        EXPECT_GT(t.skipped(), 0u);
        EXPECT_EQ(ours_at(t, 0x4001), "cfa=r7+16 ra=offset-8 rbp=same rbx=same");
    }

    // A CIE of an unknown version, and one with an unknown augmentation: their FDEs are left out.
    for (size_t patch : {size_t(8), size_t(9)}) {
        std::vector<uint8_t> b = whole;
        b[cie + patch] = patch == 8 ? 9 : 'Q';
        const FrameSection s{FrameSection::EhFrame, b.data(), b.size(), 0x1000};
        CfiTable t = CfiTable::build({&s, 1});
        EXPECT_EQ(t.find(0x3001), nullptr) << patch;
        EXPECT_GT(t.skipped(), 0u) << patch;
    }
}

TEST(CfiTableBuild, RandomMutationsNeverCrash) {
    // Byte flips, cuts and splices of a small valid section, with lookups everywhere in it: the
    // build never reads outside the section (ASan under `make sanitize`) and every row is sane.
    Frames f(FrameSection::EhFrame, 0x1000);
    const size_t cie = f.cie("zR", kCieInsns);
    f.fde(cie, 0x3000, 0x10, prologue_insns());
    std::vector<uint8_t> plt = {kDefCfaExpression, uint8_t(kPltExpr.size())};
    plt.insert(plt.end(), kPltExpr.begin(), kPltExpr.end());
    f.fde(cie, 0x3010, 0x10, plt);
    f.fde(f.cie("zRS", kCieInsns), 0x3020, 0x10,
          {kRememberState, kRememberState, kRestoreState, kRestoreState, kRestoreState});
    const std::vector<uint8_t> whole = f.bytes();
    std::mt19937_64 rng(12345);
    for (int iter = 0; iter < 20000; iter++) {
        std::vector<uint8_t> b = whole;
        const int flips = 1 + int(rng() % 4);
        for (int k = 0; k < flips; k++) {
            const size_t at = rng() % b.size();
            b[at] = (rng() & 1) ? uint8_t(rng()) : uint8_t(b[at] ^ (1u << (rng() % 8)));
        }
        if (rng() % 4 == 0) b.resize(rng() % (b.size() + 1));
        // Exactly the bytes, in a buffer of their own: ASan sees any read past the end.
        std::unique_ptr<uint8_t[]> exact(new uint8_t[b.size() + 1]);
        std::memcpy(exact.get(), b.data(), b.size());
        const FrameSection s{(rng() & 1) ? FrameSection::EhFrame : FrameSection::DebugFrame, exact.get(),
                             b.size(), 0x1000};
        CfiTable t = CfiTable::build({&s, 1});
        uint64_t prev = 0;
        for (const CfiTable::Range& r : t.ranges()) {
            ASSERT_LT(r.begin, r.end);
            ASSERT_GE(r.begin, prev) << "FDEs out of order or overlapping";
            prev = r.end;
        }
        for (auto [a, b] : our_rows(t)) {
            if (const Row* r = t.find(a)) {
                for (const RegRule& x : t.rules(*r)) ASSERT_LT(x.reg, kRegs);
                if (r->cfa_kind == CfaKind::Expression) (void)t.expression(r->cfa_offset).size();
            }
        }
        for (uint64_t pc = 0x2ff0; pc < 0x3040; pc++)
            if (const Row* r = t.find(pc)) {
                ASSERT_LE(r->pc, pc);
            }
    }
}

}  // namespace
}  // namespace perfprof::unwind
