// lib/unwind/cfi_table: the rows compiled from .eh_frame and .debug_frame, checked pc by pc against
// elfutils' libdw (which interprets the same CFI on every lookup) on real objects: the system's
// libc and dynamic loader, this test binary, and the fixtures whose C functions have their CFI in
// .debug_frame only (tests/fixtures/build.sh: in the binary, and in a debug file found by
// build-id). The table's own rules on hand-built sections are cfi_table_test's and
// cfi_program_test's.
#include "unwind/cfi_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cfi_frames.h"
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

// ---------------------------------------------------------------- libdw's rows, described as ours

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

// The test binary: ~60k FDEs of gcc's or clang's code; every 3rd keeps it at seconds under ASan.
TEST(CfiTableVsLibdw, ThisBinary) {
    check_object(test::self_exe(), "/usr/lib/debug", 3);
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

}  // namespace
}  // namespace perfprof::unwind
