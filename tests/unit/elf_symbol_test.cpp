// lib/sym/elf_symbol: symbol → file offset (SPEC §5.4.4), checked against binutils (nm, readelf)
// and against the kernel's own mapping of this test binary, plus hostile inputs.
#include "sym/elf_symbol.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "perf-prof/error.h"

extern "C" __attribute__((noinline, used)) int elf_symbol_test_target(int x) {
    asm volatile("" ::: "memory");
    return x + 7;
}

namespace perfprof::sym {
namespace {

namespace fs = std::filesystem;

std::string self_exe() {
    return fs::read_symlink("/proc/self/exe").string();
}

// stdout of a shell command; empty when it cannot run.
std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
}

bool have_binutils() {
    return !run("command -v nm readelf 2>/dev/null").empty();
}

// The file offset of `addr` in the mapping of `file` that holds it, from /proc/self/maps.
bool mapped_offset(const void* addr, uint64_t* offset, std::string* file) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    auto a = reinterpret_cast<uintptr_t>(addr);
    while (std::getline(maps, line)) {
        unsigned long long start, end, off;
        int pos = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx %*s %llx %*s %*s%n", &start, &end, &off, &pos) < 3) continue;
        if (a < start || a >= end) continue;
        *offset = a - start + off;
        std::string rest = line.substr(static_cast<size_t>(pos));
        *file = rest.substr(rest.find_first_not_of(' '));
        return true;
    }
    return false;
}

struct TextSection {
    uint64_t addr = 0, offset = 0, size = 0;
};

// .text from `readelf -SW`: "[16] .text PROGBITS 0000000000001100 001100 0001b5 ...".
bool text_section(const std::string& path, TextSection* t) {
    std::istringstream in(run("readelf -SW '" + path + "' 2>/dev/null"));
    std::string line;
    while (std::getline(in, line)) {
        size_t at = line.find(" .text ");
        if (at == std::string::npos) continue;
        std::istringstream f(line.substr(at));
        std::string name, type, addr, off, size;
        f >> name >> type >> addr >> off >> size;
        t->addr = std::stoull(addr, nullptr, 16);
        t->offset = std::stoull(off, nullptr, 16);
        t->size = std::stoull(size, nullptr, 16);
        return true;
    }
    return false;
}

// Global function symbols (nm type T, or i for IFUNCs) that occur exactly once, name → value.
// Versioned dynamic names ("memcpy@@GLIBC_2.14") are reduced to the bare name first.
std::map<std::string, uint64_t> unique_functions(const std::string& path, bool dynamic) {
    std::istringstream in(
        run(std::string("nm -P --defined-only ") + (dynamic ? "-D " : "") + "'" + path + "' 2>/dev/null"));
    std::map<std::string, uint64_t> out;
    std::map<std::string, int> count;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string name, type, value;
        if (!(f >> name >> type >> value)) continue;
        name = name.substr(0, name.find('@'));
        ++count[name];
        if (type == "T" || type == "i") out[name] = std::stoull(value, nullptr, 16);
    }
    for (auto it = out.begin(); it != out.end();) it = count[it->first] == 1 ? std::next(it) : out.erase(it);
    return out;
}

// A temporary file with the given bytes.
class TempFile {
public:
    explicit TempFile(const std::string& bytes) {
        char tmpl[] = "/tmp/elf_symbol_test.XXXXXX";
        int fd = ::mkstemp(tmpl);
        path_ = tmpl;
        if (fd >= 0) {
            size_t done = 0;
            while (done < bytes.size()) {
                ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
                if (n <= 0) break;
                done += static_cast<size_t>(n);
            }
            ::close(fd);
        }
    }
    ~TempFile() { ::unlink(path_.c_str()); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

// The offset of `func` in `path`, or the message of the Error it raised; any other outcome
// (a crash, another exception type) fails the test run.
std::string outcome(const std::string& path, std::string_view func) {
    try {
        return "offset " + std::to_string(elf_symbol_file_offset(path, func));
    } catch (const Error& e) {
        return std::string("error ") + e.what();
    }
}

TEST(ElfSymbol, OwnFunctionMatchesTheKernelsMapping) {
    uint64_t want = 0;
    std::string file;
    ASSERT_TRUE(mapped_offset(reinterpret_cast<const void*>(&elf_symbol_test_target), &want, &file));
    ASSERT_EQ(file, self_exe());
    EXPECT_EQ(elf_symbol_test_target(0), 7);
    EXPECT_EQ(elf_symbol_file_offset(self_exe(), "elf_symbol_test_target"), want);
    // A C++ function is looked up by its mangled name, never by the demangled one.
    uint64_t cxx = 0;
    ASSERT_TRUE(mapped_offset(reinterpret_cast<const void*>(&elf_symbol_file_offset), &cxx, &file));
    // (The Itanium C++ ABI name that g++ and libstdc++ give it.)
    const char* mangled =
        "_ZN8perfprof3sym22elf_symbol_file_offsetERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt17"
        "basic_string_viewIcS4_E";
    EXPECT_EQ(elf_symbol_file_offset(self_exe(), mangled), cxx);
    EXPECT_EQ(elf_symbol_file_offset(self_exe(), "perfprof::sym::elf_symbol_file_offset"), 0u);
}

TEST(ElfSymbol, SharedLibraryFunctionMatchesTheKernelsMapping) {
    // dlsym gives libc's own address of getpid (not a PLT stub of this binary).
    void* addr = ::dlsym(RTLD_DEFAULT, "getpid");
    ASSERT_NE(addr, nullptr);
    uint64_t want = 0;
    std::string lib;
    ASSERT_TRUE(mapped_offset(addr, &want, &lib));
    if (lib == self_exe()) GTEST_SKIP() << "libc is linked statically";
    EXPECT_EQ(elf_symbol_file_offset(lib, "getpid"), want);
}

// SPEC's formula, value − (.text addr − .text offset), for every unique global function of this
// binary's .symtab that lies in .text.
TEST(ElfSymbol, AgreesWithNmOnThisBinary) {
    if (!have_binutils()) GTEST_SKIP() << "nm/readelf not installed";
    std::string exe = self_exe();
    TextSection text;
    ASSERT_TRUE(text_section(exe, &text));
    auto funcs = unique_functions(exe, false);
    int checked = 0;
    for (const auto& [name, value] : funcs) {
        if (value < text.addr || value >= text.addr + text.size) continue;
        ASSERT_EQ(elf_symbol_file_offset(exe, name), value - (text.addr - text.offset)) << name;
        ++checked;
    }
    EXPECT_GT(checked, 100);
}

// The same over libc's .dynsym (no .symtab there on a stripped distribution libc).
TEST(ElfSymbol, AgreesWithNmOnLibcDynsym) {
    if (!have_binutils()) GTEST_SKIP() << "nm/readelf not installed";
    void* addr = ::dlsym(RTLD_DEFAULT, "getpid");
    uint64_t unused = 0;
    std::string libc;
    ASSERT_TRUE(addr && mapped_offset(addr, &unused, &libc));
    if (libc == self_exe()) GTEST_SKIP() << "libc is linked statically";
    TextSection text;
    ASSERT_TRUE(text_section(libc, &text));
    auto funcs = unique_functions(libc, true);
    if (!run("readelf -SW '" + libc + "' | grep -w .symtab").empty())
        GTEST_SKIP() << "libc has a .symtab, whose first match may differ from .dynsym's";
    int checked = 0;
    for (const auto& [name, value] : funcs) {
        if (value < text.addr || value >= text.addr + text.size) continue;
        ASSERT_EQ(elf_symbol_file_offset(libc, name), value - (text.addr - text.offset)) << name;
        ++checked;
    }
    EXPECT_GT(checked, 100);
}

TEST(ElfSymbol, MissingOrUndefinedSymbolIsZero) {
    std::string exe = self_exe();
    EXPECT_EQ(elf_symbol_file_offset(exe, "no_such_function_anywhere"), 0u);
    EXPECT_EQ(elf_symbol_file_offset(exe, ""), 0u);
    // Undefined here: malloc comes from libc.
    EXPECT_EQ(elf_symbol_file_offset(exe, "malloc"), 0u);
    // A data object, not a function.
    EXPECT_EQ(elf_symbol_file_offset(exe, "stdout"), 0u);
}

TEST(ElfSymbol, MissingFileOrNotAFile) {
    EXPECT_EQ(outcome("/no/such/file", "f"), "error cannot open /no/such/file: No such file or directory");
    EXPECT_EQ(outcome("/tmp", "f"), "error /tmp: not a regular file");
}

TEST(ElfSymbol, NotAnElfFile) {
    TempFile text("hello, world\n");
    EXPECT_EQ(outcome(text.path(), "main"), "error " + text.path() + ": not an ELF file");
    TempFile empty("");
    EXPECT_EQ(outcome(empty.path(), "main"), "error " + empty.path() + ": not an ELF file");
    std::mt19937 rng(42);
    std::string noise(4096, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    noise[0] = 'x';  // never the ELF magic by chance
    TempFile garbage(noise);
    EXPECT_EQ(outcome(garbage.path(), "main"), "error " + garbage.path() + ": not an ELF file");
}

// Truncated and corrupted copies of a real ELF: an Error naming the file, or an answer, never a crash.
TEST(ElfSymbol, HostileElfNeverCrashes) {
    // libc: a real, dynamically linked ELF of a size that copies quickly (this binary is large).
    void* addr = ::dlsym(RTLD_DEFAULT, "getpid");
    uint64_t unused = 0;
    std::string libc;
    ASSERT_TRUE(addr && mapped_offset(addr, &unused, &libc));
    std::string image = slurp(libc);
    ASSERT_GT(image.size(), 4096u);
    auto check = [](const std::string& bytes) {
        TempFile f(bytes);
        std::string o = outcome(f.path(), "getpid");
        if (o.starts_with("error ")) {
            EXPECT_NE(o.find(f.path()), std::string::npos) << o;
        }
    };
    // Magic only, header only, truncated in the middle, cut before the section headers.
    for (size_t n :
         {size_t(4), size_t(16), size_t(63), size_t(64), size_t(1000), image.size() / 2, image.size() - 1})
        check(image.substr(0, n));

    // An ELF header pointing far outside the file.
    std::string bad = image.substr(0, 64);
    bad[0x28] = bad[0x29] = bad[0x2a] = bad[0x2b] = '\x7f';  // e_shoff
    bad[0x3c] = bad[0x3d] = '\x7f';                          // e_shnum
    check(bad);

    // Random bytes sprayed over the header tables of a full copy.
    std::mt19937 rng(7);
    for (int round = 0; round < 40; ++round) {
        std::string copy = image;
        for (int k = 0; k < 64; ++k) {
            size_t at = rng() % 2 ? rng() % 512 : copy.size() - 1 - rng() % 4096;
            copy[at] = static_cast<char>(rng());
        }
        check(copy);
    }
}

}  // namespace
}  // namespace perfprof::sym
