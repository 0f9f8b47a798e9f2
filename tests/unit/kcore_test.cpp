// The /proc/kcore reader (lib/sym/kcore) and kcore's output (SPEC-PROFILERS §P17) on an ELF
// core file written here: two PT_LOAD segments, one PT_NOTE, kernel-like addresses.
#include "sym/kcore.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace perfprof::sym;

namespace {

constexpr uint64_t kText = 0xffffffff82a00000ull;  // segment 1: 4096 bytes
constexpr uint64_t kData = 0xffffffff90000000ull;  // segment 2: 64 bytes, memsz 64

struct CoreFile {
    std::string path = "/tmp/kcore_test." + std::to_string(::getpid());
    CoreFile() {
        std::vector<uint8_t> text(4096), data(64);
        for (size_t i = 0; i < text.size(); ++i) text[i] = uint8_t(i);
        const char banner[] = "Linux version 6.18.44 (builder@host)\nsecond line\n";
        std::memcpy(&text[0xc0], banner, sizeof banner);  // NUL included
        std::memcpy(data.data(), "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 26);
        Elf64_Ehdr eh{};
        std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_type = ET_CORE;
        eh.e_machine = EM_X86_64;
        eh.e_version = EV_CURRENT;
        eh.e_phoff = sizeof eh;
        eh.e_ehsize = sizeof eh;
        eh.e_phentsize = sizeof(Elf64_Phdr);
        eh.e_phnum = 3;
        const uint64_t base = sizeof eh + 3 * sizeof(Elf64_Phdr);
        Elf64_Phdr ph[3]{};
        ph[0].p_type = PT_NOTE;
        ph[1] = {PT_LOAD, PF_R, base, kText, 0, text.size(), text.size(), 4096};
        ph[2] = {PT_LOAD, PF_R, base + text.size(), kData, 0, data.size(), data.size(), 4096};
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(&eh), sizeof eh);
        f.write(reinterpret_cast<const char*>(ph), sizeof ph);
        f.write(reinterpret_cast<const char*>(text.data()), std::streamsize(text.size()));
        f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    }
    ~CoreFile() { ::unlink(path.c_str()); }
};

TEST(Kcore, SegmentsAndReads) {
    CoreFile core;
    Kcore k(core.path);
    ASSERT_TRUE(k.ok());
    ASSERT_EQ(k.segments().size(), 2u);
    uint8_t b[8];
    ASSERT_EQ(k.read(kText + 0x10, b, 4), 4u);
    EXPECT_EQ(b[0], 0x10);
    EXPECT_EQ(b[3], 0x13);
    EXPECT_EQ(k.read(kText + 4094, b, 8), 2u);  // short: the segment ends
    EXPECT_EQ(k.read(kText - 1, b, 1), 0u);
    EXPECT_EQ(k.read(0, b, 1), 0u);
    ASSERT_EQ(k.read(kData, b, 3), 3u);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(b), 3), "ABC");
}

TEST(Kcore, NotACoreFile) {
    EXPECT_FALSE(Kcore("/nonexistent/kcore").ok());
    EXPECT_FALSE(Kcore("/proc/self/status").ok());
    uint8_t b;
    EXPECT_EQ(Kcore("/nonexistent/kcore").read(kText, &b, 1), 0u);
    EXPECT_EQ(kcore_string(Kcore("/nonexistent/kcore"), 0), "0000000000000000: not a kernel virtual address\n");
}

TEST(Kcore, Dump) {
    CoreFile core;
    Kcore k(core.path);
    // Two 8-byte elements: one line, completed with (16-16)*2 + 0 spaces after two.
    EXPECT_EQ(kcore_dump(k, kText + 0x10, 2, 8),
              "ffffffff82a00010: 1716151413121110 1f1e1d1c1b1a1918   ................\n");
    // One 4-byte element: 12 bytes missing = 24 + 3 spaces of padding.
    EXPECT_EQ(kcore_dump(k, kData, 1, 4), "ffffffff90000000: 44434241   " + std::string(27, ' ') + "ABCD\n");
    // 20 bytes: a full line, then 4 bytes.
    EXPECT_EQ(kcore_dump(k, kData, 20, 1),
              "ffffffff90000000: 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50   ABCDEFGHIJKLMNOP\n"
              "ffffffff90000010: 51 52 53 54   " +
                  std::string(24 + 12, ' ') + "QRST\n");
    EXPECT_EQ(kcore_dump(k, kData, 2, 2), "ffffffff90000000: 4241 4443   " + std::string(24 + 6, ' ') + "ABCD\n");
    // Past the segment's end, or outside every segment.
    EXPECT_EQ(kcore_dump(k, kData + 60, 1, 8), "ffffffff9000003c: not a kernel virtual address\n");
    EXPECT_EQ(kcore_dump(k, 0, 1, 8), "0000000000000000: not a kernel virtual address\n");
}

TEST(Kcore, String) {
    CoreFile core;
    Kcore k(core.path);
    EXPECT_EQ(kcore_string(k, kText + 0xc0),
              "ffffffff82a000c0: Linux version 6.18.44 (builder@host)\n"
              "ffffffff82a000e5: second line\n"
              "ffffffff82a000f1: \n");
    EXPECT_EQ(kcore_string(k, kText - 8), "ffffffff829ffff8: not a kernel virtual address\n");
}

TEST(Kcore, KallsymsAddress) {
    std::string path = "/tmp/kallsyms_test." + std::to_string(::getpid());
    {
        std::ofstream f(path);
        f << "ffffffff81000000 T _stext\nffffffff82a000c0 D linux_banner\nffffffffc0001000 t helper\t[mod]\n";
    }
    EXPECT_EQ(kallsyms_address("linux_banner", path), 0xffffffff82a000c0ull);
    EXPECT_EQ(kallsyms_address("helper", path), 0xffffffffc0001000ull);
    EXPECT_EQ(kallsyms_address("absent", path), 0u);
    EXPECT_EQ(kallsyms_address("x", "/nonexistent"), 0u);
    ::unlink(path.c_str());
}

}  // namespace
