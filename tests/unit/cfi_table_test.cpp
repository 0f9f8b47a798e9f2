// lib/unwind/cfi_table: the rows compiled from .eh_frame and .debug_frame, checked pc by pc against
// elfutils' libdw (which interprets the same CFI on every lookup) on real objects: the system's
// libc and dynamic loader, this test binary, and the fixtures whose C functions have their CFI in
// .debug_frame only (tests/fixtures/build.sh: in the binary, and in a debug file found by
// build-id). Then the table's own rules on hand-built sections: the CFA instructions, the
// pointer encodings, the section priority, and malformed input.
#include "unwind/cfi_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "shell.h"
#include "sym/object.h"

namespace perfprof::unwind {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- an ELF file and its sections

class ElfFile {
public:
    explicit ElfFile(const std::string& path) {
        elf_version(EV_CURRENT);
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ >= 0) elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr);
    }
    ~ElfFile() {
        if (elf_) elf_end(elf_);
        if (fd_ >= 0) ::close(fd_);
    }
    ElfFile(const ElfFile&) = delete;
    ElfFile& operator=(const ElfFile&) = delete;
    Elf* get() const { return elf_; }

    // The bytes of section `name` (decompressed) and its address; false if absent or NOBITS.
    bool section(const char* name, FrameSection::Kind kind, FrameSection* out) const {
        size_t shstrndx = 0;
        if (!elf_ || elf_getshdrstrndx(elf_, &shstrndx) != 0) return false;
        for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
            const char* n = elf_strptr(elf_, shstrndx, sh.sh_name);
            if (!n || std::strcmp(n, name) != 0) continue;
            if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) return false;
            Elf_Data* d = elf_getdata(scn, nullptr);
            if (!d || !d->d_buf || d->d_size == 0) return false;
            *out = {kind, static_cast<const uint8_t*>(d->d_buf), d->d_size, sh.sh_addr};
            return true;
        }
        return false;
    }

private:
    int fd_ = -1;
    Elf* elf_ = nullptr;
};

uint32_t rd32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
uint64_t rd64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// The initial locations of every FDE of .eh_frame, from the binary search table of .eh_frame_hdr
// (the encodings every x86-64 linker writes: pcrel sdata4, udata4, datarel sdata4).
bool eh_frame_hdr_starts(const ElfFile& f, std::vector<uint64_t>* starts) {
    FrameSection hdr;
    if (!f.section(".eh_frame_hdr", FrameSection::EhFrame, &hdr)) return false;
    if (hdr.size < 12 || hdr.data[0] != 1 || hdr.data[1] != 0x1b || hdr.data[2] != 0x03 ||
        hdr.data[3] != 0x3b)
        return false;
    const uint32_t n = rd32(hdr.data + 8);
    if (12 + uint64_t(n) * 8 > hdr.size) return false;
    for (uint32_t i = 0; i < n; i++)
        starts->push_back(hdr.addr + uint64_t(int64_t(int32_t(rd32(hdr.data + 12 + 8 * i)))));
    return true;
}

// [start, end) of every FDE of a .debug_frame (32- and 64-bit DWARF, 8-byte addresses).
void debug_frame_ranges(const FrameSection& s, std::vector<std::pair<uint64_t, uint64_t>>* out) {
    size_t at = 0;
    while (at + 4 <= s.size) {
        uint64_t len = rd32(s.data + at);
        size_t hdr = 4, idsize = 4;
        if (len == 0xffffffff) {
            if (at + 12 > s.size) return;
            len = rd64(s.data + at + 4), hdr = 12, idsize = 8;
        }
        if (len == 0 || len > s.size - at - hdr) return;
        const uint8_t* e = s.data + at + hdr;
        const uint64_t id = idsize == 4 ? rd32(e) : rd64(e);
        const bool cie = idsize == 4 ? id == 0xffffffff : id == ~uint64_t(0);
        if (!cie && len >= idsize + 16) {
            const uint64_t start = rd64(e + idsize), range = rd64(e + idsize + 8);
            out->push_back({start, start + range});
        }
        at += hdr + len;
    }
}

// ---------------------------------------------------------------- one row, described two ways

// Its formats are the literals below, each with one long long conversion.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
std::string fmt(const char* f, long long v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}
#pragma GCC diagnostic pop

// Our table at `pc`: "cfa=r7+16 ra=offset-8 rbp=same rbx=same", "+ S" for a signal frame,
// or "none". Expressions by their first operation.
std::string ours_at(CfiTable& t, uint64_t pc) {
    const Row* r = t.find(pc);
    if (!r) return "none";
    std::string s = "cfa=";
    if (r->cfa_kind == CfaKind::RegOffset) {
        s += fmt("r%lld", r->cfa_reg) + fmt("%+lld", r->cfa_offset);
    } else if (r->cfa_kind == CfaKind::Expression) {
        auto e = t.expression(r->cfa_offset);
        s += e.empty() ? "expr:empty" : fmt("expr:%02llx", e[0]);
    } else {
        s += "?";
    }
    for (auto [reg, name] : {std::pair{kRa, " ra="}, {kRbp, " rbp="}, {kRbx, " rbx="}}) {
        s += name;
        const RegRule* rule = nullptr;
        for (const RegRule& x : t.rules(*r))
            if (x.reg == reg) rule = &x;
        if (!rule) {
            s += "same";
            continue;
        }
        switch (rule->kind) {
            case RuleKind::Undefined:
                s += "undef";
                break;
            case RuleKind::SameValue:
                s += "same";
                break;
            case RuleKind::Offset:
                s += fmt("offset%+lld", rule->value);
                break;
            case RuleKind::ValOffset:
                s += fmt("val_offset%+lld", rule->value);
                break;
            case RuleKind::Register:
                s += fmt("reg%lld", rule->value);
                break;
            case RuleKind::Expression:
            case RuleKind::ValExpression: {
                auto e = t.expression(rule->value);
                s += rule->kind == RuleKind::Expression ? "expr:" : "val_expr:";
                s += e.empty() ? "empty" : fmt("%02llx", e[0]);
                break;
            }
        }
    }
    if (r->flags & kSignalFrame) s += " S";
    return s;
}

// libdw's frame in the same words. dwarf_frame_register: SameValue is ops == NULL with no
// operation, Undefined an empty list; an offset rule is DW_OP_call_frame_cfa [DW_OP_plus_uconst N]
// [DW_OP_stack_value]; an expression is DW_OP_call_frame_cfa then its own operations.
std::string libdw_frame(Dwarf_Frame* f) {
    Dwarf_Addr start, end;
    bool signal = false;
    dwarf_frame_info(f, &start, &end, &signal);
    std::string s = "cfa=";
    Dwarf_Op* ops = nullptr;
    size_t n = 0;
    if (dwarf_frame_cfa(f, &ops, &n) != 0)
        s += "error";
    else if (n == 1 && ops[0].atom == DW_OP_bregx)
        s += fmt("r%lld", (long long)ops[0].number) + fmt("%+lld", (long long)(int64_t)ops[0].number2);
    else if (n == 0)
        s += "undef";
    else
        s += fmt("expr:%02llx", ops[0].atom);
    for (auto [reg, name] : {std::pair{kRa, " ra="}, {kRbp, " rbp="}, {kRbx, " rbx="}}) {
        s += name;
        Dwarf_Op mem[3];
        if (dwarf_frame_register(f, reg, mem, &ops, &n) != 0) {
            s += "error";
        } else if (n == 0) {
            s += ops ? "undef" : "same";
        } else if (n == 1 && ops[0].atom == DW_OP_regx) {
            s += fmt("reg%lld", (long long)ops[0].number);
        } else if (ops[0].atom == DW_OP_call_frame_cfa) {
            size_t i = 1;
            int64_t off = 0;
            if (i < n && ops[i].atom == DW_OP_plus_uconst) off = int64_t(ops[i++].number);
            const bool val = ops[n - 1].atom == DW_OP_stack_value;
            if (i + (val ? 1 : 0) == n)
                s += fmt(val ? "val_offset%+lld" : "offset%+lld", off);
            else
                s += fmt(val ? "val_expr:%02llx" : "expr:%02llx", ops[1].atom);
        } else {
            s += fmt("ops:%02llx", ops[0].atom);
        }
    }
    if (signal) s += " S";
    return s;
}

// ---------------------------------------------------------------- one object under both readers

// An object as CfiTable::build sees it (its .eh_frame and .debug_frame, then the .debug_frame of
// its debug file by build-id, as sym::Object::cfi() gathers them) and as libdw does (the same
// sections in the same order of priority).
struct Subject {
    std::string path;
    std::unique_ptr<ElfFile> bin, debug;
    std::vector<FrameSection> sections;
    std::vector<Dwarf_CFI*> cfis;  // libdw, in priority order
    std::vector<Dwarf*> dwarfs;
    std::vector<uint64_t> fde_starts;
    size_t hdr_fdes = 0, debug_fdes = 0;

    explicit Subject(const std::string& p, const std::string& debug_root) : path(p) {
        bin = std::make_unique<ElfFile>(p);
        if (!bin->get()) return;
        FrameSection s;
        if (bin->section(".eh_frame", FrameSection::EhFrame, &s)) {
            sections.push_back(s);
            if (Dwarf_CFI* c = dwarf_getcfi_elf(bin->get())) cfis.push_back(c);
            eh_frame_hdr_starts(*bin, &fde_starts);
            hdr_fdes = fde_starts.size();
        }
        add_debug_frame(*bin);
        const std::string id = sym::read_build_id(bin->get());
        if (id.size() > 2) {
            const std::string file =
                debug_root + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
            if (fs::exists(file)) {
                debug = std::make_unique<ElfFile>(file);
                add_debug_frame(*debug);
            }
        }
        std::sort(fde_starts.begin(), fde_starts.end());
        fde_starts.erase(std::unique(fde_starts.begin(), fde_starts.end()), fde_starts.end());
    }
    ~Subject() {
        for (Dwarf_CFI* c : cfis) dwarf_cfi_end(c);  // those of dwarf_getcfi end with their Dwarf
        for (Dwarf* d : dwarfs) dwarf_end(d);
    }

    void add_debug_frame(const ElfFile& f) {
        FrameSection s;
        if (!f.section(".debug_frame", FrameSection::DebugFrame, &s)) return;
        sections.push_back(s);
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        debug_frame_ranges(s, &ranges);
        debug_fdes += ranges.size();
        for (auto& r : ranges) fde_starts.push_back(r.first);
        if (Dwarf* d = dwarf_begin_elf(f.get(), DWARF_C_READ, nullptr)) {
            dwarfs.push_back(d);
            if (Dwarf_CFI* c = dwarf_getcfi(d)) debug_cfis.push_back(c);
        }
    }
    std::vector<Dwarf_CFI*> debug_cfis;  // not ended by us: dwarf_end does

    // The first CFI (in priority order) covering pc, described; "none" if none does.
    std::string libdw_at(uint64_t pc, Dwarf_Addr* start = nullptr, Dwarf_Addr* end = nullptr) const {
        for (const auto* list : {&cfis, &debug_cfis})
            for (Dwarf_CFI* c : *list) {
                Dwarf_Frame* f = nullptr;
                if (dwarf_cfi_addrframe(c, pc, &f) != 0) continue;
                std::string s = libdw_frame(f);
                if (start) dwarf_frame_info(f, start, end, nullptr);
                std::free(f);
                return s;
            }
        return "none";
    }
};

// Our rows (and gaps without a CFA inside an FDE), as [start, end) runs: the row find() returns
// changes only at a row's start, so each end is a binary search away (compiles the FDEs). Every
// `stride`-th FDE.
std::vector<std::pair<uint64_t, uint64_t>> our_rows(CfiTable& t, size_t stride = 1) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    const std::vector<CfiTable::Range> fdes = t.ranges();
    for (size_t i = 0; i < fdes.size(); i += stride) {
        const CfiTable::Range& fde = fdes[i];
        for (uint64_t pc = fde.begin; pc < fde.end;) {
            const Row* r = t.find(pc);
            const bool none = r == nullptr;
            const uint64_t start = none ? 0 : r->pc;
            uint64_t lo = pc + 1, hi = fde.end;  // the first pc of another row, or the end
            while (lo < hi) {
                const uint64_t mid = lo + (hi - lo) / 2;
                const Row* m = t.find(mid);
                if (none ? m != nullptr : (!m || m->pc != start))
                    hi = mid;
                else
                    lo = mid + 1;
            }
            out.push_back({pc, lo});
            pc = lo;
        }
    }
    return out;
}

// The pcs to compare at: for every FDE (by its start, independently of our table; every
// `stride`-th of a big object) each of libdw's rows at its start, start + 1, middle and end - 1;
// the same around every row of ours.
std::vector<uint64_t> probe_pcs(const Subject& s, CfiTable& t, size_t stride) {
    std::vector<uint64_t> pcs;
    auto around = [&](uint64_t a, uint64_t b) {
        pcs.push_back(a);
        if (b > a + 1) pcs.insert(pcs.end(), {a + 1, a + (b - a) / 2, b - 1});
    };
    for (size_t i = 0; i < s.fde_starts.size(); i += stride) {
        const uint64_t limit = i + 1 < s.fde_starts.size() ? s.fde_starts[i + 1] : ~uint64_t(0);
        uint64_t pc = s.fde_starts[i];
        for (int rows = 0; rows < 4096 && pc < limit; rows++) {
            Dwarf_Addr a = 0, b = 0;
            if (s.libdw_at(pc, &a, &b) == "none" || b <= pc) break;
            around(a < pc ? pc : a, b);
            pc = b;
        }
    }
    for (auto [a, b] : our_rows(t, stride)) {
        around(a, b);
        if (a) pcs.push_back(a - 1);
    }
    std::sort(pcs.begin(), pcs.end());
    pcs.erase(std::unique(pcs.begin(), pcs.end()), pcs.end());
    return pcs;
}

struct Diff {
    size_t pcs = 0, covered = 0, mismatches = 0, signal_pcs = 0;
    std::string report;  // the first mismatches, one a line
};

// elfutils' x86-64 ABI defaults (backends/x86_64_cfi.c) give rbx's "same value" to register 0
// instead of 3: for libdw an rbx the CFI never mentions is undefined, for us unchanged (callee-
// saved, as the psABI says). Both sides read "same" for rbx's undefined.
std::string rbx_as_libdw_sees_it(std::string s) {
    if (size_t at = s.find(" rbx=undef"); at != std::string::npos) s.replace(at, 10, " rbx=same");
    return s;
}

Diff compare(const Subject& s, CfiTable& t, size_t stride) {
    Diff d;
    for (uint64_t pc : probe_pcs(s, t, stride)) {
        const std::string ours = rbx_as_libdw_sees_it(ours_at(t, pc)),
                          theirs = rbx_as_libdw_sees_it(s.libdw_at(pc));
        d.pcs++;
        if (theirs != "none") d.covered++;
        if (theirs.ends_with(" S")) d.signal_pcs++;
        if (ours == theirs) continue;
        if (++d.mismatches <= 25)
            d.report += fmt("  pc 0x%llx", (long long)pc) + ": ours " + ours + " | libdw " + theirs + "\n";
    }
    return d;
}

// Builds the table both ways (the object's cached one, and CfiTable::build on the sections read
// here), checks they agree, then compares ours with libdw's at every probe pc (of every
// `stride`-th FDE).
void check_object(const std::string& path, const std::string& debug_root = "/usr/lib/debug",
                  size_t stride = 1) {
    SCOPED_TRACE(path);
    Subject s(path, debug_root);
    ASSERT_TRUE(s.bin->get()) << "cannot read " << path;
    ASSERT_FALSE(s.sections.empty()) << path << " has no .eh_frame or .debug_frame";
    ASSERT_FALSE(s.cfis.empty() && s.debug_cfis.empty())
        << "libdw reads no CFI of " << path << ": " << dwarf_errmsg(-1);
    CfiTable direct = CfiTable::build(s.sections);
    const std::shared_ptr<sym::Object> obj =
        sym::get_object(path, {}, debug_root);  // the table lives as long as it
    CfiTable& cached = obj->cfi();
    ASSERT_FALSE(direct.empty());
    EXPECT_EQ(cached.fde_count(), direct.fde_count());
    EXPECT_EQ(direct.skipped(), 0u);
    EXPECT_GE(direct.memory_bytes(), direct.row_count() * sizeof(Row));
    // Every FDE of .eh_frame_hdr is in the table; those of .debug_frame that .eh_frame covers are not.
    EXPECT_GE(direct.fde_count(), s.hdr_fdes);
    EXPECT_LE(direct.fde_count(), s.hdr_fdes + s.debug_fdes);
    for (size_t i = 0; i < s.fde_starts.size(); i += stride)
        if (s.libdw_at(s.fde_starts[i]) != "none") {
            EXPECT_NE(direct.find(s.fde_starts[i]), nullptr) << std::hex << "FDE at 0x" << s.fde_starts[i];
        }

    const Diff d = compare(s, direct, stride);
    EXPECT_EQ(d.mismatches, 0u) << d.mismatches << " of " << d.pcs << " pcs differ from libdw in " << path
                                << " (first ones):\n"
                                << d.report;
    EXPECT_GT(d.covered, s.fde_starts.size() / stride) << "too few pcs covered: the walk went wrong";
    // The cached table answers the same, and has compiled the same rows once it has run the same
    // FDEs (those of every probe).
    size_t differ = 0;
    for (uint64_t pc : probe_pcs(s, direct, stride)) differ += ours_at(cached, pc) != ours_at(direct, pc);
    EXPECT_EQ(differ, 0u);
    if (stride == 1) {
        EXPECT_EQ(cached.row_count(), direct.row_count());
    }
    std::printf(
        "[ cfi      ] %s: %zu FDEs, %zu rows, %zu KB; %zu pcs compared (%zu covered, %zu in signal frames)\n",
        path.c_str(), direct.fde_count(), direct.row_count(), direct.memory_bytes() / 1024, d.pcs, d.covered,
        d.signal_pcs);
}

std::string system_lib(const char* name) {
    for (const char* dir : {"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib64/", "/usr/lib64/"})
        if (fs::exists(std::string(dir) + name)) return std::string(dir) + name;
    return {};
}

#define NEED_FIXTURES()                           \
    ASSERT_TRUE(fs::exists(test::fixture(".ok"))) \
        << "fixtures missing: run `make unit` (or sh tests/fixtures/build.sh build/fixtures)"

TEST(CfiTableVsLibdw, Libc) {
    const std::string libc = system_lib("libc.so.6");
    ASSERT_FALSE(libc.empty());
    check_object(libc);
    // __restore_rt, the return of every signal handler, is a signal frame ('S' augmentation).
    auto obj = sym::get_object(libc);
    const uint64_t off = obj->file_offset("__restore_rt");
    if (off == 0) GTEST_SKIP() << "no symbol __restore_rt in libc (no debug symbols)";
    const uint64_t addr = off - obj->text_offset() + obj->text_addr();
    const Row* r = obj->cfi().find(addr);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->flags & kSignalFrame);
    EXPECT_EQ(r->cfa_kind, CfaKind::Expression);  // the CFA is read from the kernel's sigcontext
    Subject s(libc, "/usr/lib/debug");
    EXPECT_TRUE(s.libdw_at(addr).ends_with(" S"));
}

// A big C++ library (bench only: `make bench` installs llvm-14): every 37th of its ~100k FDEs.
TEST(CfiTableVsLibdw, BigCxxLibrary) {
    const std::string llvm = system_lib("libLLVM-14.so.1");
    if (llvm.empty()) GTEST_SKIP() << "libLLVM-14.so.1 not installed (package llvm-14)";
    check_object(llvm, "/usr/lib/debug", 37);
}

TEST(CfiTableVsLibdw, DynamicLoader) {
    const std::string ld = system_lib("ld-linux-x86-64.so.2");
    ASSERT_FALSE(ld.empty());
    check_object(ld);
}

TEST(CfiTableVsLibdw, ThisBinary) {
    check_object(test::self_exe());
}

TEST(CfiTableVsLibdw, DebugFrameOnly) {
    NEED_FIXTURES();
    Subject s(test::fixture("c_debugframe"), "/nonexistent");
    ASSERT_EQ(s.sections.size(), 2u);  // the crt files' and the PLT's .eh_frame, and .debug_frame
    EXPECT_GT(s.debug_fdes, 4u);
    check_object(test::fixture("c_debugframe"));
}

TEST(CfiTableVsLibdw, DebugFrameInDebugFile) {
    NEED_FIXTURES();
    const std::string root = test::fixture("debugroot");
    Subject s(test::fixture("c_debugframe_id"), root);
    EXPECT_EQ(s.sections.size(), 2u);  // .eh_frame of the binary, .debug_frame of its debug file
    check_object(test::fixture("c_debugframe_id"), root);
}

// ---------------------------------------------------------------- hand-built sections

// A .eh_frame or .debug_frame written entry by entry (x86-64, little-endian, 32-bit DWARF).
class Frames {
public:
    Frames(FrameSection::Kind kind, uint64_t addr) : kind_(kind), addr_(addr) {}

    // A CIE: code alignment 1, data alignment -8, return address column 16, `aug` ("zR", "zRS",
    // "" ...; 'R' gives the FDEs' pointer encoding `enc`), then `insns`. Returns its offset.
    size_t cie(const std::string& aug, std::vector<uint8_t> insns, uint8_t enc = 0x1b) {
        const size_t at = begin();
        u32(kind_ == FrameSection::EhFrame ? 0 : 0xffffffff);
        b_.push_back(1);  // version
        for (char c : aug) b_.push_back(uint8_t(c));
        b_.push_back(0);
        b_.push_back(1);     // code alignment
        b_.push_back(0x78);  // data alignment -8
        b_.push_back(16);    // return address column
        if (!aug.empty() && aug[0] == 'z') {
            b_.push_back(aug.find('R') != std::string::npos ? 1 : 0);
            if (aug.find('R') != std::string::npos) b_.push_back(enc);
        }
        enc_ = aug.find('R') != std::string::npos ? enc : 0;
        aug_ = aug;
        b_.insert(b_.end(), insns.begin(), insns.end());
        end(at);
        return at;
    }

    // An FDE of the CIE at `cie` for [pc, pc + range) with `insns`. Returns its offset.
    size_t fde(size_t cie, uint64_t pc, uint64_t range, std::vector<uint8_t> insns) {
        const size_t at = begin();
        u32(kind_ == FrameSection::EhFrame ? uint32_t(b_.size() - cie) : uint32_t(cie));
        if (kind_ == FrameSection::DebugFrame || enc_ == 0x00 || enc_ == 0x04) {
            u64(pc);
            u64(range);
        } else if (enc_ == 0x1b) {  // pcrel sdata4
            u32(uint32_t(int32_t(int64_t(pc) - int64_t(addr_ + b_.size()))));
            u32(uint32_t(range));
        } else if (enc_ == 0x03) {  // udata4
            u32(uint32_t(pc));
            u32(uint32_t(range));
        }
        if (!aug_.empty() && aug_[0] == 'z') b_.push_back(0);
        b_.insert(b_.end(), insns.begin(), insns.end());
        end(at);
        return at;
    }

    std::vector<uint8_t>& bytes() { return b_; }
    FrameSection section() const { return {kind_, b_.data(), b_.size(), addr_}; }
    CfiTable build() const {
        const FrameSection s = section();
        return CfiTable::build({&s, 1});
    }

private:
    size_t begin() {
        const size_t at = b_.size();
        u32(0);  // length, set by end()
        return at;
    }
    void end(size_t at) {
        while ((b_.size() - at) % 8) b_.push_back(0);  // DW_CFA_nop
        const uint32_t len = uint32_t(b_.size() - at - 4);
        std::memcpy(b_.data() + at, &len, 4);
    }
    void u32(uint32_t v) {
        b_.insert(b_.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
    }
    void u64(uint64_t v) {
        b_.insert(b_.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8);
    }

    FrameSection::Kind kind_;
    uint64_t addr_;
    uint8_t enc_ = 0;
    std::string aug_;
    std::vector<uint8_t> b_;
};

// DW_CFA_* with their operands (register numbers and small values as one ULEB byte).
constexpr uint8_t kAdvance = 0x40, kOffset = 0x80, kRestore = 0xc0;  // | delta, | reg
constexpr uint8_t kDefCfa = 0x0c, kDefCfaRegister = 0x0d, kDefCfaOffset = 0x0e, kDefCfaExpression = 0x0f,
                  kRememberState = 0x0a, kRestoreState = 0x0b, kUndefined = 0x07, kSameValue = 0x08,
                  kRegister = 0x09, kValOffset = 0x14, kExpression = 0x10, kAdvanceLoc1 = 0x02;
// The CIE of every x86-64 object: CFA = rsp + 8, return address at CFA - 8.
const std::vector<uint8_t> kCieInsns = {kDefCfa, 7, 8, kOffset | 16, 1};
// What a PLT's FDE says after its first instructions (ld's elf_x86_64_eh_frame_plt).
const std::vector<uint8_t> kPltExpr = {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};

// A function at [pc, pc + 16) with a frame pointer: push %rbp at +0, mov %rsp,%rbp at +1, an
// early return at +8 (remember_state, CFA back to rsp + 8) and the rest of the body from +9.
std::vector<uint8_t> prologue_insns() {
    return {kAdvance | 1, kDefCfaOffset,   16,      kOffset | 6, 2,  // +1: CFA rsp+16, rbp at CFA-16
            kAdvance | 3, kDefCfaRegister, 6,                        // +4: CFA rbp+16
            kAdvance | 4, kRememberState,  kDefCfa, 7,           8,  // +8: CFA rsp+8
            kAdvance | 1, kRestoreState};                            // +9: CFA rbp+16 again
}

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
