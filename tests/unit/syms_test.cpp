// Process symbols (SPEC §5.4.1, §5.4.2): maps parsing, DSO merging, address → symbol against
// this test process itself, and the per-tgid cache.
#include "sym/syms.h"
#include "sym/object_cache.h"
#include "sym/symbolizer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sym/dwarf_names.h"
#include "sym/pprof_symbols.h"

extern "C" __attribute__((noinline, used)) int syms_test_helper_function(int x) {
    asm volatile("" ::: "memory");
    return x * 3 + 1;
}

namespace perfprof::sym {
namespace {

std::string self_maps() {
    std::ifstream f("/proc/self/maps");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

uint64_t addr_of(const void* p) {
    return reinterpret_cast<uint64_t>(p);
}

TEST(ParseMapsLine, Full) {
    MapsLine m;
    ASSERT_TRUE(parse_maps_line(
        "7f1b2a000000-7f1b2a1c5000 r-xp 00028000 fd:01 402111                     /usr/lib/libc.so.6", m));
    EXPECT_EQ(m.start, 0x7f1b2a000000u);
    EXPECT_EQ(m.end, 0x7f1b2a1c5000u);
    EXPECT_EQ(m.perms, "r-xp");
    EXPECT_EQ(m.offset, 0x28000u);
    EXPECT_EQ(m.dev_major, 0xfdu);
    EXPECT_EQ(m.dev_minor, 1u);
    EXPECT_EQ(m.inode, 402111u);
    EXPECT_EQ(m.path, "/usr/lib/libc.so.6");
}

TEST(ParseMapsLine, EdgeCases) {
    MapsLine m;
    // Empty path, padded inode column (gperftools pads with spaces), \r\n.
    ASSERT_TRUE(parse_maps_line("00400000-00452000 r-xp 00000000 00:00 0          \r\n", m));
    EXPECT_EQ(m.path, "");
    ASSERT_TRUE(parse_maps_line("00400000-00452000 r-xp 00000000 00:00 0", m));
    EXPECT_EQ(m.path, "");
    // Paths with spaces are kept whole.
    ASSERT_TRUE(parse_maps_line("1000-2000 r-xp 0 103:05 77 /tmp/a b (deleted)", m));
    EXPECT_EQ(m.path, "/tmp/a b (deleted)");
    ASSERT_TRUE(parse_maps_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]", m));
    EXPECT_EQ(m.path, "[vsyscall]");

    for (const char* bad :
         {"", "0x401a3c", "garbage", "1000-2000", "1000-2000 r-xp", "1000-2000 r-xp 0 08:01",
          "1000 r-xp 0 08:01 5 /x", "1000-zz r-xp 0 08:01 5 /x", "1000-2000 r-xpq 0 08:01 5 /x",
          "1000-2000 r-xz 0 08:01 5 /x", "1000-2000 r-xp 0 0801 5 /x", "1000-2000 r-xp 0 08:01 5x /x",
          "1000-2000 r-xp g 08:01 5 /x", "11112222333344445-2000 r-xp 0 08:01 5 /x"})
        EXPECT_FALSE(parse_maps_line(bad, m)) << bad;
    // A NUL is no permission letter (strchr finds the terminator): found by maps_fuzz.
    using namespace std::string_view_literals;
    EXPECT_FALSE(parse_maps_line("1000-2000 r\0\0p 0 08:01 5 /x"sv, m));
}

TEST(Syms, MappingRules) {
    ObjectCache objects;
    Syms s(
        "1000-2000 r-xp 00000000 08:01 5 /nonexistent/a.so\n"
        "2000-3000 r--p 00001000 08:01 5 /nonexistent/a.so\n"
        "3000-4000 r-xp 00002000 08:01 5 /nonexistent/a.so\n"
        "4000-5000 r-xp 00000000 00:00 0 \n"
        "5000-6000 r-xp 00000000 00:00 0 [heap]\n"
        "6000-7000 r-xp 00000000 00:05 1 /dev/zero (deleted)\n"
        "7000-8000 r-xp 00000000 08:01 9 /nonexistent/gone (deleted)\n"
        "8000-9000 r-xp 00000000 00:00 0 //anon\n"
        "9000-a000 r-xp 00000000 00:01 3 /SYSV00000000 (deleted)\n"
        "a000-b000 r-xp 00000000 00:00 0 [stack]\n"
        "b000-c000 r-xp 00000000 00:08 7 socket:[12]\n"
        "c000-d000 rw-p 00000000 08:01 8 /nonexistent/data\n"
        "not a maps line\n",
        0, objects);
    EXPECT_EQ(s.dso_count(), 1u);
    Frame f;
    ASSERT_TRUE(s.resolve(0x1000, f));  // start <= addr
    ASSERT_NE(f.dso, nullptr);
    EXPECT_EQ(*f.dso, "/nonexistent/a.so");
    EXPECT_EQ(f.sym, nullptr);  // the file does not exist: no symbols, but a DSO frame
    EXPECT_EQ(f.dso_offset, 0u);
    ASSERT_TRUE(s.resolve(0x3abc, f));
    EXPECT_EQ(f.dso_offset, 0x2abcu);
    EXPECT_FALSE(s.resolve(0x2000, f));  // r--p
    EXPECT_FALSE(s.resolve(0x4000, f));  // addr == end of the executable range... and anon
    EXPECT_FALSE(s.resolve(0x4500, f));
    EXPECT_FALSE(s.resolve(0x5500, f));
    EXPECT_FALSE(s.resolve(0x7500, f));  // deleted, pid 0: skipped
    EXPECT_FALSE(s.resolve(0xfff, f));
    EXPECT_FALSE(s.resolve(UINT64_MAX, f));
    EXPECT_TRUE(s.mapped(0xc800));
    EXPECT_FALSE(s.mapped(0xd000));
}

void expect_self_resolution(Syms& s) {
    Frame f;
    ASSERT_TRUE(s.resolve(addr_of(reinterpret_cast<void*>(&syms_test_helper_function)) + 2, f));
    ASSERT_NE(f.sym, nullptr);
    EXPECT_EQ(*f.sym, "syms_test_helper_function");
    EXPECT_EQ(f.offset, 2u);
    ASSERT_NE(f.dso, nullptr);

    auto gp = &getpid;
    ASSERT_TRUE(s.resolve(addr_of(reinterpret_cast<void*>(gp)), f));
    ASSERT_NE(f.sym, nullptr);
    // Aliases (getpid, __getpid, __GI___getpid with debug info) share the address.
    EXPECT_NE(f.sym->find("getpid"), std::string::npos) << *f.sym;
    EXPECT_EQ(f.offset, 0u);
    ASSERT_NE(f.dso, nullptr);
    EXPECT_NE(f.dso->find("libc"), std::string::npos) << *f.dso;
    // dso_offset is the file offset: dladdr's base is the load bias of a DYN object, and the
    // file offset of a function in libc's text equals its vaddr minus the segment skew.
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(gp), &info), 0);
    uint64_t vaddr = addr_of(reinterpret_cast<void*>(gp)) - addr_of(info.dli_fbase);
    EXPECT_LE(f.dso_offset, vaddr);
    EXPECT_LT(vaddr - f.dso_offset, 0x200000u);

    // C++ symbols come back demangled.
    auto fn = &Syms::dso_count;
    (void)fn;
}

TEST(Syms, ResolvesOwnFunctionsPid0) {
    ObjectCache objects;
    Syms s(self_maps(), 0, objects);
    EXPECT_GT(s.dso_count(), 2u);
    expect_self_resolution(s);
}

TEST(Syms, ResolvesOwnFunctionsThroughProcRoot) {
    ObjectCache objects;
    Syms s(self_maps(), getpid(), objects);
    expect_self_resolution(s);
}

TEST(Syms, Vdso) {
    uint64_t base = getauxval(AT_SYSINFO_EHDR);
    if (!base) GTEST_SKIP() << "no vDSO";
    for (int pid : {0, static_cast<int>(getpid())}) {
        ObjectCache objects;
        Syms s(self_maps(), pid, objects);
        bool named = false;
        Frame f;
        for (uint64_t a = base; a < base + 0x2000 && s.resolve(a, f); a += 8) {
            ASSERT_NE(f.dso, nullptr);
            EXPECT_EQ(*f.dso, "[vdso]");
            if (f.sym && f.sym->find("gettime") != std::string::npos) named = true;
        }
        EXPECT_TRUE(named) << "pid " << pid;
    }
}

// §5.4.1: a deleted executable is read through /proc/PID/exe; other deleted files are skipped.
TEST(Syms, DeletedExecutableThroughProcExe) {
    char dir[] = "/tmp/syms_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::string copy = std::string(dir) + "/sleeper";
    {
        std::ifstream in("/bin/sleep", std::ios::binary);
        std::ofstream out(copy, std::ios::binary);
        out << in.rdbuf();
    }
    ASSERT_EQ(chmod(copy.c_str(), 0755), 0);
    pid_t pid = fork();
    if (pid == 0) {
        execl(copy.c_str(), "sleeper", "5", (char*)nullptr);
        _exit(127);
    }
    ASSERT_GT(pid, 0);
    std::string maps;
    for (int i = 0; i < 200 && maps.find("sleeper") == std::string::npos; ++i) {
        usleep(5000);
        std::ifstream f("/proc/" + std::to_string(pid) + "/maps");
        std::stringstream ss;
        ss << f.rdbuf();
        maps = ss.str();
    }
    unlink(copy.c_str());
    rmdir(dir);
    std::ifstream f("/proc/" + std::to_string(pid) + "/maps");
    std::stringstream ss;
    ss << f.rdbuf();
    maps = ss.str();
    uint64_t text = 0;
    std::istringstream lines(maps);
    std::string line;
    while (std::getline(lines, line)) {
        MapsLine m;
        if (parse_maps_line(line, m) && m.perms[2] == 'x' && m.path.find("sleeper") != std::string::npos) {
            EXPECT_NE(m.path.find(" (deleted)"), std::string::npos) << m.path;
            text = m.start;
        }
    }
    if (text) {
        ObjectCache objects;
        Syms with_pid(maps, pid, objects);
        Frame fr;
        ASSERT_TRUE(with_pid.resolve(text, fr));
        ASSERT_NE(fr.dso, nullptr);
        EXPECT_EQ(*fr.dso, "/proc/" + std::to_string(pid) + "/exe");
        Syms pid0(maps, 0, objects);  // the --symbols service: no rewrite, the mapping is skipped
        EXPECT_FALSE(pid0.resolve(text, fr));
    }
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    ASSERT_NE(text, 0u) << maps;
}

TEST(SymsCache, ResolvesAndPicksUpDlopen) {
    ObjectCache objects;
    SymsCache c(objects);
    int me = getpid();
    Frame f;
    ASSERT_TRUE(c.resolve(me, addr_of(reinterpret_cast<void*>(&syms_test_helper_function)), f));
    ASSERT_NE(f.sym, nullptr);
    EXPECT_EQ(*f.sym, "syms_test_helper_function");
    EXPECT_EQ(c.size(), 1u);
    EXPECT_FALSE(c.resolve(me, 8, f));  // nothing mapped there, twice (negative cache)
    EXPECT_FALSE(c.resolve(me, 8, f));

    // A library loaded after the first lookup is found on the miss (maps re-read).
    struct Cand {
        const char *lib, *sym;
    };
    void* h = nullptr;
    const char* want = nullptr;
    for (Cand k : {Cand{"libuuid.so.1", "uuid_generate"}, Cand{"libbz2.so.1.0", "BZ2_bzopen"},
                   Cand{"libacl.so.1", "acl_init"}, Cand{"libcrypt.so.1", "crypt"},
                   Cand{"libexpat.so.1", "XML_ParserCreate"}}) {
        if (dlopen(k.lib, RTLD_NOW | RTLD_NOLOAD)) continue;
        if ((h = dlopen(k.lib, RTLD_NOW))) {
            want = k.sym;
            break;
        }
    }
    if (!h) GTEST_SKIP() << "no unloaded candidate library to dlopen";
    void* fp = dlsym(h, want);
    ASSERT_NE(fp, nullptr);
    ASSERT_TRUE(c.resolve(me, addr_of(fp), f));
    ASSERT_NE(f.sym, nullptr);
    EXPECT_EQ(*f.sym, want);
    c.drop(me);
    EXPECT_EQ(c.size(), 0u);
}

TEST(PprofSymbols, Exchange) {
    std::string maps = self_maps();
    char line[64];
    std::string in = maps;
    std::snprintf(
        line, sizeof line, "0x%llx\n",
        static_cast<unsigned long long>(addr_of(reinterpret_cast<void*>(&syms_test_helper_function))));
    in += line;
    in += "0xdeadbeef\r\n";  // nothing mapped there
    in += "\n";              // empty: no answer
    in += "0xnothex\n";      // a bad address still gets one line
    in += "0X";              // ... and so does an empty one, without a newline
    in += "\n0x1\n";
    EXPECT_EQ(pprof_symbols(in, "/nonexistent/binary"), "syms_test_helper_function\n??\n??\n??\n??\n");
    // No maps table at all.
    EXPECT_EQ(pprof_symbols("0x1000\n", "/nonexistent"), "??\n");
    EXPECT_EQ(pprof_symbols("", "/nonexistent"), "");
    EXPECT_EQ(pprof_symbols("1000-2000 r-xp 0 08:01 5 /x", "/nonexistent"), "");  // no newline
    EXPECT_EQ(pprof_symbols("1000-2000 r-xp 0 08:01 5 /x\n0x1500", "/nonexistent"), "??\n");
    EXPECT_EQ(pprof_symbols("0x2\nname\n0x1\n0x2\n", "/dev/null"), "??\n??\n??\n");
    // Name lookups in BINARY: unknown names and a missing binary print nothing.
    EXPECT_EQ(pprof_symbols("no_such_symbol_anywhere\n", "/proc/self/exe"), "");
    EXPECT_EQ(pprof_symbols("main\n", "/nonexistent"), "");
}

TEST(PprofSymbols, NameLookupInBinary) {
    std::string out = pprof_symbols("syms_test_helper_function\n", "/proc/self/exe");
    ASSERT_EQ(out.substr(0, 2), "0x") << out;
    EXPECT_EQ(out.back(), '\n');
    uint64_t off = std::stoull(out.substr(2), nullptr, 16);
    EXPECT_GT(off, 0u);
}

}  // namespace
}  // namespace perfprof::sym

namespace perfprof::sym {
namespace {

TEST(PprofSymbols, ShortFunctionName) {
    EXPECT_EQ(pprof_short_name("main"), "main");
    EXPECT_EQ(pprof_short_name("MallocExtension::Initialize()"), "MallocExtension::Initialize");
    EXPECT_EQ(pprof_short_name("std::__cxx11::basic_string<char, std::char_traits<char>, "
                               "std::allocator<char> >::_M_mutate(unsigned long, unsigned long, "
                               "char const*, unsigned long)"),
              "std::__cxx11::basic_string::_M_mutate");
    EXPECT_EQ(pprof_short_name("Foo::bar(int (*)(int)) const"), "Foo::bar");
    EXPECT_EQ(pprof_short_name("void ns::f<int>(int)"), "ns::f");
    EXPECT_EQ(pprof_short_name("fn<1f2e>"), "fn");
    EXPECT_EQ(pprof_short_name("a b c::d e::f"), "e::f");
    EXPECT_EQ(pprof_short_name("unbalanced(<"), "unbalanced(<");
    EXPECT_EQ(pprof_short_name(""), "");
}

}  // namespace
}  // namespace perfprof::sym

namespace perfprof::sym {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
    std::error_code ec;
    for (fs::path p = fs::read_symlink("/proc/self/exe", ec).parent_path(); !p.empty() && p != p.root_path();
         p = p.parent_path())
        if (fs::exists(p / "tests/fixtures/build.sh")) return (p / "build/fixtures" / name).string();
    return "build/fixtures/" + name;
}

// `pprof --symbols` for offsets of `file` mapped at 0x7f0000000000 (offset 0, so the link-time
// address of a PIE is the offset).
std::string pprof_at(const std::string& file, std::initializer_list<uint64_t> offs,
                     const std::string& debug_root = kDefaultDebugRoot) {
    std::string in = "7f0000000000-7f0000002000 r-xp 00000000 08:01 1 " + file + "\n";
    char line[32];
    for (uint64_t o : offs) {
        std::snprintf(line, sizeof line, "0x%llx\n", static_cast<unsigned long long>(0x7f0000000000ull + o));
        in += line;
    }
    SymbolsRun run;
    run.debug_root = debug_root;
    return pprof_symbols(in, file, run);
}

TEST(PprofSymbols, ShortFunctionNamePerlSemantics) {
    // s/\([^()]*\)(\s*const)?//g repeated: inner groups first, `const` (even of `constexpr`).
    EXPECT_EQ(pprof_short_name("f(a (b) const) const"), "f");
    EXPECT_EQ(pprof_short_name("a(b)(c) constexpr"), "aexpr");
    EXPECT_EQ(pprof_short_name("std::operator<<(std::ostream&)"), "std::operator<<");
    EXPECT_EQ(pprof_short_name("x::y<a<b>, c>::z(int)"), "x::y::z");
    EXPECT_EQ(pprof_short_name("foo@@LLVM_14<0000000000001234>"), "foo@@LLVM_14");
}

// The rules pprof applies (checked against google-pprof on these fixtures): nm's routine
// boundaries stretch a name over the padding after it; with `_fini` in nm's output pprof runs
// addr2line -i and reads `_fini` as its separator.
TEST(PprofSymbols, PprofRulesOnFixture) {
    std::string pie = fixture("c_pie");
    if (!fs::exists(pie)) GTEST_SKIP() << "fixtures missing: run `make unit`";
    // 0x1139 static_helper (0x28 bytes), 0x1161 static_other, 0x11ec main (0x3a) then
    // _fini at 0x1228; _start 0x1050 (0x22 bytes), then padding up to 0x1080.
    EXPECT_EQ(pprof_at(pie, {0x1140, 0x1161, 0x1075, 0x1227, 0x1085, 0x11e9, 0x1229}),
              "static_helper\nstatic_other\n_start\nmain\nderegister_tm_clones\nfixture_tiny\n??\n");
}

// DWARF from the separate debug file found by build-id: a stripped binary still gets names.
TEST(PprofSymbols, DwarfFromDebugFileByBuildId) {
    std::string bin = fixture("c_debugid");
    if (!fs::exists(bin)) GTEST_SKIP() << "fixtures missing: run `make unit`";
    std::string with = pprof_at(bin, {0x1139, 0x1150, 0x1193 + 0x10}, fixture("debugroot"));
    std::string without = pprof_at(bin, {0x1139}, "/nonexistent");
    EXPECT_EQ(with, "static_helper\nstatic_helper\nfixture_loop\n");
    EXPECT_EQ(without, "??\n");
}

TEST(DwarfNames, InnermostAndOutermost) {
    std::string bin = fixture("c_pie");
    if (!fs::exists(bin)) GTEST_SKIP() << "fixtures missing: run `make unit`";
    EXPECT_TRUE(has_debug_info(bin));
    EXPECT_FALSE(has_debug_info(fixture("c_stripped")));
    EXPECT_EQ(DwarfNames::open(fixture("c_stripped")), nullptr);
    auto d = DwarfNames::open(bin);
    ASSERT_NE(d, nullptr);
    DwarfFunction in, out;
    ASSERT_TRUE(d->lookup(0x1193 + 4, &in, &out));
    EXPECT_EQ(in.name, "fixture_loop");
    EXPECT_EQ(out.name, "fixture_loop");
    EXPECT_EQ(in.entry, 0x1193u);
    EXPECT_FALSE(d->lookup(0x1075, &in, &out));  // _start: no DWARF function
}

// serve's /pprof/symbol: '+'-separated addresses of a live process (this one), one line each
// for those with a name; kernel addresses from kallsyms.
TEST(SymbolPage, AddressesOfAProcess) {
    Symbolizer cache;
    const int pid = getpid();
    const uint64_t fn = addr_of(reinterpret_cast<void*>(&syms_test_helper_function));
    char body[128];
    std::snprintf(body, sizeof body, "0x%llx+0x10+0X%llx+junk+0x+0xzz+0x%llx",
                  static_cast<unsigned long long>(fn + 1), static_cast<unsigned long long>(fn + 2),
                  static_cast<unsigned long long>(fn + 3));
    char want[160];
    std::snprintf(want, sizeof want,
                  "0x%llx\tsyms_test_helper_function\n0x%llx\tsyms_test_helper_function\n"
                  "0x%llx\tsyms_test_helper_function\n",
                  static_cast<unsigned long long>(fn + 1), static_cast<unsigned long long>(fn + 2),
                  static_cast<unsigned long long>(fn + 3));
    EXPECT_EQ(symbol_page(cache, pid, body), want);
    // Newline-separated as well; nothing for nothing.
    EXPECT_EQ(symbol_page(cache, pid, ""), "");
    EXPECT_EQ(symbol_page(cache, pid, "+++"), "");
    std::snprintf(body, sizeof body, "0x%llx\n", static_cast<unsigned long long>(fn));
    EXPECT_EQ(symbol_page(cache, pid, body).substr(0, 2), "0x");
    // A kernel address is named from kallsyms (when root can read them).
    const std::string k = symbol_page(cache, pid, "0xffffffffffffff00");
    EXPECT_TRUE(k.empty() || k.rfind("0xffffffffffffff00\t", 0) == 0) << k;
}

}  // namespace
}  // namespace perfprof::sym
