// lib/heap/agent/unwind_cfi: the heap agent walker's CFI parser. Its rule at the addresses of
// every FDE of every object loaded in this process (read in place, through each object's
// .eh_frame_hdr, as the agent reads them) against perf-prof's own CFI compiler
// (lib/unwind/cfi_table, checked against libdw by cfi_table_test) reading the same .eh_frame
// from the file; then hand-built sections: each CFA instruction the walker follows, the CIE
// augmentations and pointer encodings; then truncated, mutated and random bytes, which must
// fail cleanly (sanitize-quick runs these under ASan with exact-size buffers: a read past one
// is reported).
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "heap/agent/unwind.h"
#include "heap/agent/unwind_cfi.h"
#include "shell.h"
#include "unwind/cfi_table.h"

namespace {

using namespace perfprof::unwind;

// ---------------------------------------------------------------- the loaded objects vs CfiTable

struct Loaded {
    std::string path;
    uint64_t bias;
    pph_cfi cfi;
};

bool segment_of(const dl_phdr_info* info, uint64_t addr, pph_mem* out) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type != PT_LOAD || addr < lo || addr - lo >= ph.p_memsz) continue;
        *out = {reinterpret_cast<const uint8_t*>(lo), lo, ph.p_memsz};
        return true;
    }
    return false;
}

int add_loaded(dl_phdr_info* info, size_t, void* arg) {
    auto* out = static_cast<std::vector<Loaded>*>(arg);
    std::string path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : perfprof::test::self_exe();
    if (path.find("linux-vdso") != std::string::npos) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_GNU_EH_FRAME) continue;
        Loaded l{path, info->dlpi_addr, {}};
        const uint64_t hdr = info->dlpi_addr + ph.p_vaddr;
        pph_mem seg;
        if (segment_of(info, hdr, &seg) && pph_cfi_parse_hdr(&seg, hdr, &l.cfi) == PPH_CFI_OK &&
            segment_of(info, l.cfi.eh_frame, &l.cfi.eh_seg))
            out->push_back(l);
    }
    return 0;
}

// .eh_frame of the file, as CfiTable reads it.
CfiTable file_table(const std::string& path) {
    CfiTable t;
    elf_version(EV_CURRENT);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return t;
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    size_t shstrndx = 0;
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            const char* name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
            if (!name || std::strcmp(name, ".eh_frame") != 0 || sh.sh_type == SHT_NOBITS) continue;
            if (Elf_Data* d = elf_getdata(scn, nullptr); d && d->d_buf) {
                const FrameSection s{FrameSection::EhFrame, static_cast<const uint8_t*>(d->d_buf), d->d_size,
                                     sh.sh_addr};
                t = CfiTable::build({&s, 1});
            }
        }
    }
    if (elf) elf_end(elf);
    ::close(fd);
    return t;
}

// What our parser must say where CfiTable has row `r` (nullptr: no FDE).
std::string expected(CfiTable& t, const Row* r) {
    if (!r) return "none";
    if (r->cfa_kind != CfaKind::RegOffset || (r->cfa_reg != kRsp && r->cfa_reg != kRbp)) return "unsupported";
    const RegRule *ra = nullptr, *rbp = nullptr;
    for (const RegRule& x : t.rules(*r)) {
        if (x.reg == kRa) ra = &x;
        if (x.reg == kRbp) rbp = &x;
    }
    std::string s = (r->cfa_reg == kRbp ? "rbp" : "rsp") + std::to_string(r->cfa_offset);
    if (ra && ra->kind == RuleKind::Undefined)
        s += " outermost";
    else if (ra && ra->kind == RuleKind::Offset && ra->value >= -128 && ra->value < 128)
        s += " ra" + std::to_string(ra->value);
    else
        return "unsupported";
    if (rbp && rbp->kind == RuleKind::Offset) s += " rbp" + std::to_string(rbp->value);
    else if (rbp) s += " rbp-lost";
    if (r->flags & kSignalFrame) s += " signal";
    return s;
}

std::string describe(int rc, const pph_rule& r) {
    if (rc == PPH_CFI_NONE) return "none";
    if (rc == PPH_CFI_UNSUPPORTED) return "unsupported";
    if (rc != PPH_CFI_OK) return "bad";
    std::string s = ((r.flags & PPH_RULE_CFA_RBP) ? "rbp" : "rsp") + std::to_string(r.cfa_off);
    if (r.flags & PPH_RULE_OUTERMOST)
        s += " outermost";
    else
        s += " ra" + std::to_string(r.ra_off);
    if (r.flags & PPH_RULE_RBP_SAVED) s += " rbp" + std::to_string(r.rbp_off);
    if (r.flags & PPH_RULE_RBP_LOST) s += " rbp-lost";
    if (r.flags & PPH_RULE_SIGNAL) s += " signal";
    return s;
}

TEST(HeapAgentCfi, LoadedObjectsAgreeWithCfiTable) {
    std::vector<Loaded> objects;
    dl_iterate_phdr(add_loaded, &objects);
    ASSERT_GE(objects.size(), 3u);  // this binary, libc, ld.so at least
    size_t checked = 0, mismatches = 0, libc_checked = 0;
    for (Loaded& o : objects) {
        CfiTable t = file_table(o.path);
        if (t.empty()) continue;
        size_t here = 0;
        for (const CfiTable::Range& f : t.ranges()) {
            for (uint64_t pc : {f.begin, f.begin + 1, f.begin + 4, f.begin + (f.end - f.begin) / 3,
                                f.begin + (f.end - f.begin) / 2, f.end - 2, f.end - 1, f.end}) {
                if (pc < f.begin || pc > f.end) continue;
                const std::string want = expected(t, t.find(pc));
                pph_rule r{};
                const std::string got = describe(pph_cfi_find(&o.cfi, o.bias + pc, &r), r);
                here++;
                if (got != want && mismatches++ < 10)
                    ADD_FAILURE() << o.path << " pc 0x" << std::hex << pc << ": " << got << ", CfiTable: " << want;
            }
        }
        checked += here;
        if (o.path.find("libc.so") != std::string::npos) libc_checked = here;
    }
    EXPECT_EQ(mismatches, 0u);
    EXPECT_GT(libc_checked, 10000u);
    EXPECT_GT(checked, libc_checked);
}

// The walker's rule cache keeps two return addresses that share a set (their low 13 bits):
// walks alternating between them miss once each, then hit.
TEST(HeapAgentCfi, TwoAddressesSharingACacheSet) {
    std::vector<Loaded> objects;
    dl_iterate_phdr(add_loaded, &objects);
    const Loaded* libc = nullptr;
    for (const Loaded& o : objects)
        if (o.path.find("libc.so") != std::string::npos) libc = &o;
    ASSERT_TRUE(libc);
    // Two functions of libc whose starts are 8 KiB apart, modulo 8 KiB: one past each start is
    // a return address whose rule is "CFA = rsp + 8".
    const pph_mem& seg = libc->cfi.hdr_seg;
    const uint8_t* table = seg.bytes + (libc->cfi.table - seg.addr);
    std::vector<uint64_t> starts;
    for (uint32_t i = 0; i < libc->cfi.fde_count; i++) {
        int32_t loc;
        std::memcpy(&loc, table + 8 * uint64_t(i), 4);
        const uint64_t start = libc->cfi.hdr + uint64_t(int64_t(loc));
        pph_rule r{};
        if (describe(pph_cfi_find(&libc->cfi, start, &r), r) == "rsp8 ra-8") starts.push_back(start);
    }
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < starts.size() && !b; i++)
        for (size_t j = i + 1; j < starts.size() && !b; j++)
            if ((starts[j] - starts[i]) % 8192 == 0) a = starts[i] + 1, b = starts[j] + 1;
    ASSERT_TRUE(b);
    // Their callers' return addresses are 0 on this stack: each walk looks one rule up.
    uint64_t stack[4] = {};
    uint64_t out[4];
    pph_unwind_invalidate();
    struct pph_unwind_stats before, after;
    pph_unwind_stats(&before);
    for (int i = 0; i < 6; i++)
        EXPECT_EQ(pph_unwind(pph_frame{i % 2 ? b : a, reinterpret_cast<uint64_t>(stack), 0}, out, 4), 1);
    pph_unwind_stats(&after);
    EXPECT_EQ(after.misses - before.misses, 2u);
    EXPECT_EQ(after.hits - before.hits, 4u);
}

// ---------------------------------------------------------------- hand-built sections

// Little-endian bytes, LEB128 and entries with their length field.
struct Bytes {
    std::vector<uint8_t> b;
    Bytes& u8(uint8_t v) { return b.push_back(v), *this; }
    Bytes& u32(uint32_t v) {
        for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i)));
        return *this;
    }
    Bytes& uleb(uint64_t v) {
        do {
            uint8_t x = v & 0x7f;
            v >>= 7;
            b.push_back(uint8_t(x | (v ? 0x80 : 0)));
        } while (v);
        return *this;
    }
    Bytes& sleb(int64_t v) {
        for (;;) {
            const uint8_t x = v & 0x7f;
            v >>= 7;
            const bool done = (v == 0 && !(x & 0x40)) || (v == -1 && (x & 0x40));
            b.push_back(uint8_t(x | (done ? 0 : 0x80)));
            if (done) return *this;
        }
    }
    Bytes& raw(std::initializer_list<uint8_t> v) { return b.insert(b.end(), v), *this; }
    size_t size() const { return b.size(); }
};

constexpr uint64_t kSeg = 0x10000;  // the address the hand-built segment lies at

// A CIE ("zR", or `aug` with its data), then an FDE for [0x1000, 0x1100) running `program`.
struct Section {
    Bytes bytes;
    uint64_t fde = 0;  // address of the FDE
};
Section build(const std::vector<uint8_t>& program, const char* aug = "zR",
              std::vector<uint8_t> aug_data = {0x03}, std::vector<uint8_t> fde_aug = {}) {
    Section s;
    Bytes cie;
    cie.u32(0).u8(1);
    for (const char* p = aug; *p; p++) cie.u8(uint8_t(*p));
    cie.u8(0).uleb(1).sleb(-8).u8(16);
    if (*aug == 'z') cie.uleb(aug_data.size()).raw({}).b.insert(cie.b.end(), aug_data.begin(), aug_data.end());
    cie.raw({0x0c, 0x07, 0x08, 0x90, 0x01});  // def_cfa rsp+8; ra at cfa-8
    s.bytes.u32(uint32_t(cie.size())).b.insert(s.bytes.b.end(), cie.b.begin(), cie.b.end());
    s.fde = kSeg + s.bytes.size();
    Bytes fde;
    fde.u32(uint32_t(s.bytes.size() + 4));  // back to the CIE, from this field
    const bool pcrel = !aug_data.empty() && aug_data.back() == 0x1b;
    const uint64_t field = s.fde + 8;
    fde.u32(pcrel ? uint32_t(0x1000 - field) : 0x1000).u32(0x100);
    if (*aug == 'z') fde.uleb(fde_aug.size()).b.insert(fde.b.end(), fde_aug.begin(), fde_aug.end());
    fde.b.insert(fde.b.end(), program.begin(), program.end());
    s.bytes.u32(uint32_t(fde.size())).b.insert(s.bytes.b.end(), fde.b.begin(), fde.b.end());
    return s;
}

std::string rule_at(const Section& s, uint64_t pc) {
    const pph_mem m{s.bytes.b.data(), kSeg, s.bytes.size()};
    pph_rule r{};
    return describe(pph_cfi_fde_rule(&m, s.fde, pc, &r), r);
}

const std::vector<uint8_t> kProgram = {
    0x41,                    // advance 1 → 0x1001
    0x0e, 0x10,              // def_cfa_offset 16
    0x86, 0x02,              // rbp at cfa-16
    0x43,                    // advance 3 → 0x1004
    0x0d, 0x06,              // def_cfa_register rbp
    0x4c,                    // advance 12 → 0x1010
    0x0a,                    // remember_state
    0x0c, 0x07, 0x08,        // def_cfa rsp+8
    0xc6,                    // restore rbp
    0x41,                    // → 0x1011
    0x0b,                    // restore_state
    0x41,                    // → 0x1012
    0x0f, 0x02, 0x77, 0x08,  // def_cfa_expression (DW_OP_breg7 8)
    0x02, 0x01,              // advance_loc1 1 → 0x1013
    0x12, 0x07, 0x7e,        // def_cfa_sf rsp, -2 * -8 = 16
    0x07, 0x10,              // ra undefined
    0x03, 0x01, 0x00,        // advance_loc2 1 → 0x1014
    0x2e, 0x20,              // GNU_args_size 32
    0x11, 0x10, 0x7f,        // ra at cfa + -1 * -8: offset_extended_sf
    0x10, 0x06, 0x01, 0x9c,  // rbp: an expression (DW_OP_call_frame_cfa)
    0x04, 0x0c, 0, 0, 0,     // advance_loc4 12 → 0x1020
    0x08, 0x10,              // ra same value: not recoverable
    0x41,                    // → 0x1021
    0x05, 0x10, 0x01,        // offset_extended ra at cfa-8
    0x13, 0x7d,              // def_cfa_offset_sf 24
    0x00, 0x00,              // nops
};

TEST(HeapAgentCfi, CfaInstructions) {
    const Section s = build(kProgram);
    EXPECT_EQ(rule_at(s, 0xfff), "none");
    EXPECT_EQ(rule_at(s, 0x1000), "rsp8 ra-8");
    EXPECT_EQ(rule_at(s, 0x1001), "rsp16 ra-8 rbp-16");
    EXPECT_EQ(rule_at(s, 0x1003), "rsp16 ra-8 rbp-16");
    EXPECT_EQ(rule_at(s, 0x1004), "rbp16 ra-8 rbp-16");
    EXPECT_EQ(rule_at(s, 0x100f), "rbp16 ra-8 rbp-16");
    EXPECT_EQ(rule_at(s, 0x1010), "rsp8 ra-8");
    EXPECT_EQ(rule_at(s, 0x1011), "rbp16 ra-8 rbp-16");
    EXPECT_EQ(rule_at(s, 0x1012), "unsupported");
    EXPECT_EQ(rule_at(s, 0x1013), "rsp16 outermost rbp-16");
    EXPECT_EQ(rule_at(s, 0x1014), "rsp16 ra8 rbp-lost");
    EXPECT_EQ(rule_at(s, 0x101f), "rsp16 ra8 rbp-lost");
    EXPECT_EQ(rule_at(s, 0x1020), "unsupported");
    EXPECT_EQ(rule_at(s, 0x1021), "rsp24 ra-8 rbp-lost");
    EXPECT_EQ(rule_at(s, 0x10ff), "rsp24 ra-8 rbp-lost");
    EXPECT_EQ(rule_at(s, 0x1100), "none");
}

TEST(HeapAgentCfi, AugmentationsAndEncodings) {
    // "zPLRS": a personality (indirect pcrel sdata4, skipped), an LSDA encoding, pcrel sdata4
    // FDE addresses, a signal frame; the FDE's augmentation data holds its LSDA pointer.
    const Section s = build({0x41, 0x0e, 0x10}, "zPLRS", {0x9b, 0x11, 0x22, 0x33, 0x44, 0x1b, 0x1b},
                            {0x55, 0x66, 0x77, 0x08});
    EXPECT_EQ(rule_at(s, 0x1000), "rsp8 ra-8 signal");
    EXPECT_EQ(rule_at(s, 0x1001), "rsp16 ra-8 signal");
    EXPECT_EQ(rule_at(s, 0x1100), "none");
    // Unknown augmentation, unknown opcode, remember_state without end.
    EXPECT_EQ(rule_at(build({0x41}, "zRX", {0x03}), 0x1000), "unsupported");
    EXPECT_EQ(rule_at(build({0x41, 0x3f}), 0x1002), "bad");
    EXPECT_EQ(rule_at(build({0x0b}), 0x1000), "bad");  // restore_state with nothing remembered
    std::vector<uint8_t> deep(9, 0x0a);
    EXPECT_EQ(rule_at(build(deep), 0x1000), "bad");  // deeper than the walker's stack
    EXPECT_EQ(rule_at(build(std::vector<uint8_t>(8, 0x0a)), 0x1000), "rsp8 ra-8");
}

// The same section behind an .eh_frame_hdr: the table's binary search finds the FDE.
TEST(HeapAgentCfi, SearchTable) {
    const Section s = build(kProgram);
    Bytes seg;
    const uint64_t hdr = kSeg, eh = kSeg + 20;
    seg.raw({1, 0x1b, 0x03, 0x3b}).u32(uint32_t(eh - (hdr + 4))).u32(1);
    seg.u32(uint32_t(0x1000 - hdr)).u32(uint32_t(eh + (s.fde - kSeg) - hdr));
    ASSERT_EQ(seg.size(), 20u);
    seg.b.insert(seg.b.end(), s.bytes.b.begin(), s.bytes.b.end());
    const pph_mem m{seg.b.data(), kSeg, seg.size()};
    pph_cfi cfi{};
    ASSERT_EQ(pph_cfi_parse_hdr(&m, hdr, &cfi), PPH_CFI_OK);
    EXPECT_EQ(cfi.eh_frame, eh);
    EXPECT_EQ(cfi.fde_count, 1u);
    cfi.eh_seg = m;
    pph_rule r{};
    EXPECT_EQ(describe(pph_cfi_find(&cfi, 0x1004, &r), r), "rbp16 ra-8 rbp-16");
    EXPECT_EQ(describe(pph_cfi_find(&cfi, 0xfff, &r), r), "none");
    EXPECT_EQ(describe(pph_cfi_find(&cfi, 0x1100, &r), r), "none");
    // Another table encoding, another version, a count past the segment, a header cut short.
    auto parse = [&](size_t at, uint8_t value, uint64_t hdr_at) {
        std::vector<uint8_t> other = seg.b;
        other[at] = value;
        const pph_mem mo{other.data(), kSeg, other.size()};
        pph_cfi c{};
        return pph_cfi_parse_hdr(&mo, hdr_at, &c);
    };
    EXPECT_EQ(parse(3, 0x03, hdr), PPH_CFI_UNSUPPORTED);
    EXPECT_EQ(parse(0, 2, hdr), PPH_CFI_UNSUPPORTED);
    EXPECT_EQ(parse(8, 200, hdr), PPH_CFI_BAD);
    EXPECT_EQ(parse(0, 1, kSeg + seg.size() - 2), PPH_CFI_BAD);
}

// An empty FDE at the same location as the one covering the pc, after it in the table.
TEST(HeapAgentCfi, EmptyFdeSharingItsLocation) {
    Section s = build(kProgram);
    const uint64_t empty = kSeg + s.bytes.size();
    Bytes fde;
    fde.u32(uint32_t(s.bytes.size() + 4)).u32(0x1000).u32(0).uleb(0);
    s.bytes.u32(uint32_t(fde.size())).b.insert(s.bytes.b.end(), fde.b.begin(), fde.b.end());
    Bytes seg;
    const uint64_t hdr = kSeg, eh = kSeg + 28;
    seg.raw({1, 0x1b, 0x03, 0x3b}).u32(uint32_t(eh - (hdr + 4))).u32(2);
    seg.u32(uint32_t(0x1000 - hdr)).u32(uint32_t(eh + (s.fde - kSeg) - hdr));
    seg.u32(uint32_t(0x1000 - hdr)).u32(uint32_t(eh + (empty - kSeg) - hdr));
    ASSERT_EQ(seg.size(), 28u);
    seg.b.insert(seg.b.end(), s.bytes.b.begin(), s.bytes.b.end());
    const pph_mem m{seg.b.data(), kSeg, seg.size()};
    pph_cfi cfi{};
    ASSERT_EQ(pph_cfi_parse_hdr(&m, hdr, &cfi), PPH_CFI_OK);
    cfi.eh_seg = m;
    pph_rule r{};
    EXPECT_EQ(describe(pph_cfi_find(&cfi, 0x1004, &r), r), "rbp16 ra-8 rbp-16");
    EXPECT_EQ(describe(pph_cfi_find(&cfi, 0x1100, &r), r), "none");
}

// ---------------------------------------------------------------- malformed bytes

// Every answer at a handful of addresses, from exact-size copies of `bytes`.
void probe(const std::vector<uint8_t>& bytes, uint64_t fde, size_t* ok) {
    const std::vector<uint8_t> copy(bytes);  // exact size: ASan sees a byte past it
    const pph_mem m{copy.data(), kSeg, copy.size()};
    for (uint64_t pc : {0x0, 0xfff, 0x1000, 0x1001, 0x1013, 0x10ff, -1}) {
        pph_rule r{};
        const int rc = pph_cfi_fde_rule(&m, fde, pc, &r);
        ASSERT_TRUE(rc >= PPH_CFI_OK && rc <= PPH_CFI_BAD);
        if (rc == PPH_CFI_OK) {
            ASSERT_TRUE(r.flags & PPH_RULE_VALID);
            ++*ok;
        }
    }
    pph_cfi cfi{};
    if (pph_cfi_parse_hdr(&m, kSeg, &cfi) == PPH_CFI_OK) {
        cfi.eh_seg = m;
        pph_rule r{};
        for (uint64_t pc : {uint64_t(0x1000), kSeg, kSeg + 64}) (void)pph_cfi_find(&cfi, pc, &r);
    }
}

TEST(HeapAgentCfi, TruncatedEntriesFail) {
    const Section s = build(kProgram, "zPLRS", {0x9b, 0x11, 0x22, 0x33, 0x44, 0x1b, 0x1b}, {1, 2, 3, 4});
    size_t ok = 0;
    for (size_t len = 0; len < s.bytes.size(); len++) {
        const std::vector<uint8_t> cut(s.bytes.b.begin(), s.bytes.b.begin() + len);
        probe(cut, s.fde, &ok);
    }
    EXPECT_EQ(ok, 0u) << "a truncated FDE gave a rule";
    probe(s.bytes.b, s.fde, &ok);
    EXPECT_GT(ok, 0u);
}

TEST(HeapAgentCfi, MutatedAndRandomBytesFailCleanly) {
    std::mt19937_64 rng(25);
    const Section s = build(kProgram);
    size_t ok = 0;
    for (int i = 0; i < 20000; i++) {
        std::vector<uint8_t> b = s.bytes.b;
        for (int k = 1 + int(rng() % 4); k > 0; k--) b[rng() % b.size()] = uint8_t(rng());
        if (rng() % 4 == 0) b.resize(rng() % b.size());
        probe(b, s.fde, &ok);
    }
    for (int i = 0; i < 5000; i++) {
        std::vector<uint8_t> b(1 + rng() % 96);
        for (uint8_t& x : b) x = uint8_t(rng());
        probe(b, kSeg + rng() % (b.size() + 8), &ok);
    }
    EXPECT_GT(ok, 0u);  // some mutations leave the FDE intact
}

}  // namespace
