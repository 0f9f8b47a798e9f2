// lib/sym/object: ELF objects and their symbols (SPEC §5.4), checked against binutils (nm,
// readelf) on the fixtures built by tests/fixtures/build.sh into build/fixtures, against the
// kernel's own mapping of this binary and libc, and on hostile inputs.
#include "sym/object.h"
#include "sym/object_cache.h"
#include "sym/syms.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "shell.h"

extern "C" __attribute__((noinline, used)) int object_test_target(int x) {
    asm volatile("" ::: "memory");
    return x + 7;
}

namespace perfprof::sym {
namespace {

namespace fs = std::filesystem;

using test::run;
using test::self_exe;

bool have_binutils() {
    return !run("command -v nm readelf 2>/dev/null").empty();
}

// build/fixtures of the repository holding this test binary (build/unit_tests or
// build/san/unit_tests), or of the current directory.
std::string fixtures_dir() {
    for (fs::path p = fs::path(self_exe()).parent_path(); !p.empty() && p != p.root_path();
         p = p.parent_path())
        if (fs::exists(p / "tests/fixtures/build.sh")) return (p / "build/fixtures").string();
    return "build/fixtures";
}

#define NEED_FIXTURES()                                                                                 \
    ASSERT_TRUE(fs::exists(fixtures_dir() + "/.ok"))                                                    \
        << "fixtures missing: run `make unit` (or sh tests/fixtures/build.sh build/fixtures) to build " \
        << fixtures_dir()

std::string fx(const std::string& name) {
    return fixtures_dir() + "/" + name;
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
        size_t first = rest.find_first_not_of(' ');
        *file = first == std::string::npos ? "" : rest.substr(first);
        return true;
    }
    return false;
}

std::string libc_path() {
    void* addr = ::dlsym(RTLD_DEFAULT, "getpid");
    uint64_t unused = 0;
    std::string lib;
    if (!addr || !mapped_offset(addr, &unused, &lib)) return {};
    return lib;
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

struct NmSym {
    uint64_t value = 0, size = 0;
    char type = 0;
    std::string raw, demangled;
};

// Defined symbols from `nm -S` (and `nm -S -C` for the demangled names), in symbol table order.
std::vector<NmSym> nm(const std::string& path, bool dynamic = false) {
    std::string opts = std::string("--defined-only -S -p ") + (dynamic ? "-D " : "");
    std::istringstream raw(run("nm " + opts + "'" + path + "' 2>/dev/null"));
    std::istringstream dem(run("nm -C " + opts + "'" + path + "' 2>/dev/null"));
    std::vector<NmSym> out;
    std::string a, b;
    auto parse = [](const std::string& line, NmSym* s) {
        // "VALUE [SIZE] TYPE NAME": the name is the rest of the line (demangled ones have spaces).
        std::istringstream f(line);
        std::string v, x;
        if (!(f >> v >> x)) return false;
        s->value = std::stoull(v, nullptr, 16);
        if (x.size() == 1) {
            s->type = x[0];
        } else {
            s->size = std::stoull(x, nullptr, 16);
            std::string t;
            if (!(f >> t) || t.size() != 1) return false;
            s->type = t[0];
        }
        std::string rest;
        std::getline(f, rest);
        s->raw = rest.substr(rest.find_first_not_of(' '));
        return true;
    };
    while (std::getline(raw, a) && std::getline(dem, b)) {
        NmSym s, d;
        if (!parse(a, &s) || !parse(b, &d)) continue;
        s.raw = s.raw.substr(0, s.raw.find('@'));
        s.demangled = d.raw.substr(0, d.raw.find('@'));
        out.push_back(s);
    }
    return out;
}

bool is_function(char t) {
    return t == 'T' || t == 't' || t == 'W' || t == 'i';
}

// Every function of `reference` (nm) with a size resolves in `obj`, at its start and its middle, to
// a symbol of that address whose raw name and display name are among nm's names for it.
// With `names` false (a library whose debug file may add other aliases), only the start is checked.
int check_functions(Object& obj, const std::string& reference, bool only_dynamic = false, bool names = true) {
    std::vector<NmSym> syms = nm(reference, only_dynamic);
    std::map<uint64_t, std::set<std::string>> raw_at, dem_at;
    for (const NmSym& s : syms) {
        raw_at[s.value].insert(s.raw);
        dem_at[s.value].insert(s.demangled);
    }
    int checked = 0;
    for (const NmSym& s : syms) {
        if (!is_function(s.type) || s.size == 0 || s.value == 0) continue;
        for (uint64_t addr : {s.value, s.value + s.size / 2}) {
            const Symbol* got = obj.find(addr);
            EXPECT_NE(got, nullptr) << reference << ": " << s.raw << " at " << std::hex << addr;
            if (!got) continue;
            EXPECT_EQ(got->start, s.value) << s.raw;
            if (!names) continue;
            EXPECT_EQ(raw_at[s.value].count(got->name), 1u) << s.raw << " resolved to " << got->name;
            EXPECT_EQ(dem_at[s.value].count(obj.name(*got)), 1u)
                << s.demangled << " shown as " << obj.name(*got);
        }
        ++checked;
    }
    return checked;
}

// readelf's view of the header facts: type, build-id, .text.
void check_header(Object& obj, const std::string& path) {
    std::string h = run("readelf -hW '" + path + "'");
    if (h.find("EXEC (Executable file)") != std::string::npos)
        EXPECT_EQ(obj.type(), ObjectType::Exec) << path;
    else if (h.find("DYN (") != std::string::npos)
        EXPECT_EQ(obj.type(), ObjectType::Dyn) << path;
    else
        ADD_FAILURE() << path << ": unexpected type " << h;
    std::string notes =
        run("readelf -n '" + path + "' 2>/dev/null | sed -n 's/.*Build ID: *\\([0-9a-f]*\\).*/\\1/p'");
    while (!notes.empty() && notes.back() == '\n') notes.pop_back();
    EXPECT_EQ(obj.build_id(), notes) << path;
    TextSection t;
    ASSERT_TRUE(text_section(path, &t)) << path;
    EXPECT_EQ(obj.text_addr(), t.addr) << path;
    EXPECT_EQ(obj.text_offset(), t.offset) << path;
}

// file_offset() of every function of `reference` whose name occurs once is SPEC's formula.
int check_file_offsets(Object& obj, const std::string& reference) {
    std::vector<NmSym> syms = nm(reference);
    std::map<std::string, int> count;
    for (const NmSym& s : syms) ++count[s.raw];
    std::vector<const NmSym*> funcs;
    for (const NmSym& s : syms) {
        // Not W: weak untyped symbols may be data (data_start). Not the '.' labels of hand-written
        // assembly (clang's ASan runtime: .check_load_add_1_RAX): nm shows them as t, but they
        // are NOTYPE, no functions, and an Object keeps functions only.
        if ((s.type != 'T' && s.type != 't' && s.type != 'i') || count[s.raw] != 1 || s.raw.starts_with('.'))
            continue;
        funcs.push_back(&s);
    }
    // file_offset() scans the table (uprobes ask for a few names): at most 3000 names, spread
    // over the whole table, keep a test binary of 60k functions at seconds under ASan.
    const size_t step = std::max<size_t>(1, funcs.size() / 3000);
    int checked = 0;
    for (size_t i = 0; i < funcs.size(); i += step) {
        const NmSym& s = *funcs[i];
        EXPECT_EQ(obj.file_offset(s.raw), s.value - (obj.text_addr() - obj.text_offset())) << s.raw;
        ++checked;
    }
    return checked;
}

// A temporary file with the given bytes.
class TempFile {
public:
    explicit TempFile(const std::string& bytes) {
        char tmpl[] = "/tmp/object_test.XXXXXX";
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

// ---- fixtures ----

class ObjectFixture : public ::testing::Test {
protected:
    void SetUp() override {
        if (!have_binutils()) GTEST_SKIP() << "nm/readelf not installed";
    }
    // The objects of this test, shared by build-id or inode, with the fixtures' debug root.
    std::shared_ptr<Object> get_object(const std::string& path, const std::string& open_path = {}) {
        return objects_.get(path, open_path);
    }
    ObjectCache objects_{fx("debugroot")};
};

TEST_F(ObjectFixture, PlainVariantsResolveEveryFunction) {
    NEED_FIXTURES();
    for (const char* name : {"c_plain", "c_pie", "libfixture.so", "cxx_plain"}) {
        SCOPED_TRACE(name);
        auto obj = get_object(fx(name));
        check_header(*obj, fx(name));
        EXPECT_GE(check_functions(*obj, fx(name)), std::string(name).starts_with("cxx") ? 12 : 6);
        EXPECT_GE(check_file_offsets(*obj, fx(name)), 4);
        EXPECT_GT(obj->symbol_count(), 10u);
        EXPECT_GT(obj->memory_bytes(), 0u);
    }
    EXPECT_EQ(get_object(fx("c_plain"))->type(), ObjectType::Exec);
    EXPECT_EQ(get_object(fx("c_pie"))->type(), ObjectType::Dyn);
}

TEST_F(ObjectFixture, StaticAndCxxNames) {
    NEED_FIXTURES();
    auto c = get_object(fx("c_plain"));
    std::set<std::string> names;
    for (const NmSym& s : nm(fx("c_plain")))
        if (const Symbol* got = c->find(s.value); got && is_function(s.type)) names.insert(c->name(*got));
    for (const char* want :
         {"static_helper", "static_other", "fixture_add", "fixture_loop", "fixture_tiny", "main"})
        EXPECT_EQ(names.count(want), 1u) << want;

    auto cxx = get_object(fx("cxx_plain"));
    names.clear();
    for (const NmSym& s : nm(fx("cxx_plain")))
        if (const Symbol* got = cxx->find(s.value); got && is_function(s.type)) names.insert(cxx->name(*got));
    for (const char* want :
         {"int outer::inner::twice<int>(int)", "double outer::inner::twice<double>(double)",
          "outer::inner::Widget::value() const", "outer::inner::overloaded(double)",
          "outer::Counter<42>::count()", "(anonymous namespace)::anon_function(int)"})
        EXPECT_EQ(names.count(want), 1u) << want;
    // Demangled once: the same string object every time.
    const Symbol* s = cxx->find(cxx->text_addr());
    if (s) {
        EXPECT_EQ(&cxx->name(*s), &cxx->name(*s));
    }
}

TEST_F(ObjectFixture, StrippedHasOnlyDynamicSymbols) {
    NEED_FIXTURES();
    auto obj = get_object(fx("c_stripped"));
    check_header(*obj, fx("c_stripped"));
    for (const NmSym& s : nm(fx("c_stripped.full"))) {
        if (s.raw != "static_helper" && s.raw != "fixture_add") continue;
        const Symbol* got = obj->find(s.value);
        EXPECT_TRUE(!got || got->name != s.raw) << s.raw;
        EXPECT_EQ(obj->file_offset(s.raw), 0u);
    }
    // A stripped shared library keeps its exports in .dynsym.
    TempFile lib(slurp(fx("libfixture.so")));
    ASSERT_EQ(std::system(("strip '" + lib.path() + "'").c_str()), 0);
    // Same build-id as libfixture.so: only shared if that object is alive, which it is not here.
    auto so = get_object(lib.path());
    EXPECT_GE(check_functions(*so, fx("libfixture.so"), true), 4);
}

TEST_F(ObjectFixture, MiniDebugInfo) {
    NEED_FIXTURES();
    for (const char* name : {"c_minidebug", "cxx_minidebug"}) {
        SCOPED_TRACE(name);
        std::string full = fx(name) + ".full";
        auto obj = get_object(fx(name));
        check_header(*obj, fx(name));
        EXPECT_GE(check_functions(*obj, full), 6);
        EXPECT_GE(check_file_offsets(*obj, full), 4);
    }
}

TEST_F(ObjectFixture, TruncatedMiniDebugInfoKeepsTheOtherSymbols) {
    NEED_FIXTURES();
    auto obj = get_object(fx("libtrunc.so"));
    EXPECT_EQ(obj->type(), ObjectType::Dyn);
    EXPECT_GE(check_functions(*obj, fx("libtrunc.so.full"), true), 4);  // .dynsym
    for (const NmSym& s : nm(fx("libtrunc.so.full")))
        if (s.raw == "static_helper") {
            EXPECT_TRUE(!obj->find(s.value) || obj->find(s.value)->name != s.raw);
        }
}

TEST_F(ObjectFixture, SeparateDebugFileByBuildId) {
    NEED_FIXTURES();
    auto obj = get_object(fx("c_debugid"));
    check_header(*obj, fx("c_debugid"));
    ASSERT_FALSE(obj->build_id().empty());
    ASSERT_TRUE(fs::exists(fx("debugroot/.build-id/" + obj->build_id().substr(0, 2) + "/" +
                              obj->build_id().substr(2) + ".debug")));
    EXPECT_GE(check_functions(*obj, fx("c_debugid.full")), 6);
    EXPECT_GE(check_file_offsets(*obj, fx("c_debugid.full")), 4);
}

TEST_F(ObjectFixture, WithoutTheDebugRootTheStrippedBinaryHasNoLocalSymbols) {
    NEED_FIXTURES();
    TempFile copy(slurp(fx("c_debugid")));
    auto obj = sym::get_object(copy.path(), {}, "/nonexistent");
    for (const NmSym& s : nm(fx("c_debugid.full")))
        if (s.raw == "static_helper") {
            EXPECT_EQ(obj->find(s.value), nullptr);
        }
}

TEST_F(ObjectFixture, SeparateDebugFileByDebuglink) {
    NEED_FIXTURES();
    auto obj = get_object(fx("c_debuglink"));
    EXPECT_TRUE(obj->build_id().empty());
    EXPECT_GE(check_functions(*obj, fx("c_debuglink.full")), 6);
    EXPECT_GE(check_file_offsets(*obj, fx("c_debuglink.full")), 4);
}

TEST_F(ObjectFixture, SharedByBuildIdAndInode) {
    NEED_FIXTURES();
    auto a = get_object(fx("c_pie"));
    auto b = get_object(fx("c_pie"), fx("c_pie"));
    EXPECT_EQ(a.get(), b.get());
    TempFile copy(slurp(fx("c_pie")));  // same build-id, another file
    EXPECT_EQ(get_object(copy.path()).get(), a.get());
    auto l1 = get_object(fx("c_debuglink"));  // no build-id: by inode
    auto l2 = get_object(fx("c_debuglink"));
    EXPECT_EQ(l1.get(), l2.get());
    TempFile lcopy(slurp(fx("c_debuglink")));
    EXPECT_NE(get_object(lcopy.path()).get(), l1.get());
}

TEST_F(ObjectFixture, SymbolsLoadThroughThePathWhenTheOpenPathIsGone) {
    NEED_FIXTURES();
    // A copy with a build-id of its own, so that no object in the cache stands in for it.
    std::string image = slurp(fx("c_plain"));
    const std::string id = get_object(fx("c_plain"))->build_id();
    ASSERT_GE(id.size(), 4u);
    std::string raw;
    for (size_t i = 0; i + 1 < id.size(); i += 2) raw += char(std::stoi(id.substr(i, 2), nullptr, 16));
    const size_t at = image.find(raw);
    ASSERT_NE(at, std::string::npos);
    image[at + raw.size() - 1] ^= 0x5a;
    char dir[] = "/tmp/object_test.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/bin", through = std::string(dir) + "/root-bin";
    std::ofstream(path, std::ios::binary) << image;
    ASSERT_EQ(::link(path.c_str(), through.c_str()), 0);
    // Read through the process's /proc/PID/root, which is gone (the process has exited) when
    // the symbols are loaded.
    auto obj = get_object(path, through);
    ASSERT_EQ(obj->type(), ObjectType::Exec);
    EXPECT_NE(obj->build_id(), id);
    EXPECT_FALSE(obj->loaded());
    ::unlink(through.c_str());
    EXPECT_GE(check_functions(*obj, path), 6);
    ::unlink(path.c_str());
    ::rmdir(dir);
}

// ---- this binary, libc, the vDSO ----

TEST(Object, OwnFunctionMatchesTheKernelsMapping) {
    uint64_t want = 0;
    std::string file;
    ASSERT_TRUE(mapped_offset(reinterpret_cast<const void*>(&object_test_target), &want, &file));
    ASSERT_EQ(file, self_exe());
    EXPECT_EQ(object_test_target(0), 7);
    auto obj = get_object(self_exe());
    EXPECT_EQ(obj->file_offset("object_test_target"), want);
    // A C++ function is looked up by its mangled name, never by the demangled one.
    uint64_t cxx = 0;
    ASSERT_TRUE(mapped_offset(reinterpret_cast<const void*>(&reason_text), &cxx, &file));
    EXPECT_EQ(obj->file_offset("_ZN8perfprof3sym11reason_textENS0_13UnknownReasonE"), cxx);
    EXPECT_EQ(obj->file_offset("perfprof::sym::reason_text"), 0u);
}

TEST(Object, SharedLibraryFunctionMatchesTheKernelsMapping) {
    void* addr = ::dlsym(RTLD_DEFAULT, "getpid");
    ASSERT_NE(addr, nullptr);
    uint64_t want = 0;
    std::string lib;
    ASSERT_TRUE(mapped_offset(addr, &want, &lib));
    if (lib == self_exe()) GTEST_SKIP() << "libc is linked statically";
    auto obj = get_object(lib);
    EXPECT_EQ(obj->file_offset("getpid"), want);
    // And back: the address in libc's own space resolves to getpid (or an alias of it).
    const Symbol* s = obj->find(want + obj->text_addr() - obj->text_offset());
    ASSERT_NE(s, nullptr);
    EXPECT_NE(std::string(s->name).find("getpid"), std::string::npos) << s->name;
}

TEST(Object, AgreesWithNmOnThisBinary) {
    if (!have_binutils()) GTEST_SKIP() << "nm/readelf not installed";
    auto obj = get_object(self_exe());
    check_header(*obj, self_exe());
    EXPECT_GT(check_file_offsets(*obj, self_exe()), 100);
}

TEST(Object, AgreesWithNmOnLibc) {
    if (!have_binutils()) GTEST_SKIP() << "nm/readelf not installed";
    std::string libc = libc_path();
    if (libc.empty() || libc == self_exe()) GTEST_SKIP() << "libc is linked statically";
    auto obj = get_object(libc);
    check_header(*obj, libc);
    EXPECT_GT(check_functions(*obj, libc, true, false), 100);
}

TEST(Object, MissingOrUndefinedSymbolIsZero) {
    auto obj = get_object(self_exe());
    EXPECT_EQ(obj->file_offset("no_such_function_anywhere"), 0u);
    EXPECT_EQ(obj->file_offset(""), 0u);
    EXPECT_EQ(obj->file_offset("malloc"), 0u);  // undefined here: it comes from libc
    EXPECT_EQ(obj->file_offset("stdout"), 0u);  // a data object, not a function
}

TEST(Object, Vdso) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    unsigned long long start = 0, end = 0;
    while (std::getline(maps, line))
        if (line.ends_with("[vdso]")) std::sscanf(line.c_str(), "%llx-%llx", &start, &end);
    if (!start) GTEST_SKIP() << "no vDSO";
    std::string image(reinterpret_cast<const char*>(start), end - start);
    auto obj = object_from_image("[vdso]", image);
    EXPECT_EQ(obj->type(), ObjectType::Dyn);
    EXPECT_GT(obj->symbol_count(), 0u);
    uint64_t off = obj->file_offset("__vdso_clock_gettime");
    ASSERT_NE(off, 0u);
    const Symbol* s = obj->find(off + obj->text_addr() - obj->text_offset());
    ASSERT_NE(s, nullptr);
    EXPECT_NE(std::string(s->name).find("clock_gettime"), std::string::npos);
}

// ---- hostile inputs ----

void expect_unknown(const std::shared_ptr<Object>& obj) {
    EXPECT_EQ(obj->type(), ObjectType::Unknown);
    EXPECT_EQ(obj->symbol_count(), 0u);
    EXPECT_EQ(obj->find(0x1000), nullptr);
    EXPECT_EQ(obj->file_offset("main"), 0u);
}

TEST(Object, MissingEmptyDirectoryGarbage) {
    expect_unknown(get_object("/no/such/file"));
    expect_unknown(get_object("/tmp"));
    TempFile text("hello, world\n");
    expect_unknown(get_object(text.path()));
    TempFile empty("");
    expect_unknown(get_object(empty.path()));
    std::mt19937 rng(42);
    std::string noise(4096, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    TempFile garbage(noise);
    expect_unknown(get_object(garbage.path()));
    expect_unknown(object_from_image("x", noise));
    expect_unknown(object_from_image("x", ""));
    // Through open_path: the object is named by path but read from elsewhere.
    auto o = get_object("/shown/path", self_exe());
    EXPECT_EQ(o->path(), "/shown/path");
    EXPECT_NE(o->type(), ObjectType::Unknown);
}

TEST(Object, RelocatableObjectIsUnknown) {
    TempFile src("int f(void) { return 1; }\n");
    std::string obj = src.path() + ".o";
    if (std::system(("gcc -x c -c -o '" + obj + "' '" + src.path() + "' 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "no gcc";
    expect_unknown(get_object(obj));
    ::unlink(obj.c_str());
}

// Truncated and corrupted copies of libc, as files and as images: an answer, never a crash.
TEST(Object, HostileElfNeverCrashes) {
    std::string libc = libc_path();
    if (libc.empty()) GTEST_SKIP() << "no libc";
    std::string image = slurp(libc);
    ASSERT_GT(image.size(), 4096u);
    auto check = [](const std::string& bytes) {
        for (int as_file = 0; as_file < 2; ++as_file) {
            std::shared_ptr<Object> obj;
            std::unique_ptr<TempFile> f;
            if (as_file) {
                f = std::make_unique<TempFile>(bytes);
                obj = get_object(f->path());
            } else {
                obj = object_from_image("hostile", bytes);
            }
            size_t n = obj->symbol_count();
            for (uint64_t a = 0; a < 0x40000 && n; a += 0x101)
                if (const Symbol* s = obj->find(obj->text_addr() + a)) (void)obj->name(*s);
            (void)obj->file_offset("getpid");
        }
    };
    for (size_t n :
         {size_t(4), size_t(16), size_t(63), size_t(64), size_t(1000), image.size() / 2, image.size() - 1})
        check(image.substr(0, n));
    std::string bad = image.substr(0, 64);
    bad[0x28] = bad[0x29] = bad[0x2a] = bad[0x2b] = '\x7f';  // e_shoff
    bad[0x3c] = bad[0x3d] = '\x7f';                          // e_shnum
    check(bad);
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
        std::string copy = image;
        for (int k = 0; k < 64; ++k) {
            size_t at = rng() % 2 ? rng() % 512 : copy.size() - 1 - rng() % 4096;
            copy[at] = static_cast<char>(rng());
        }
        check(copy);
    }
}

// ---- demangling ----

TEST(Demangle, Names) {
    EXPECT_EQ(demangle("main"), "main");
    EXPECT_EQ(demangle(""), "");
    EXPECT_EQ(demangle("_Z"), "_Z");
    EXPECT_EQ(demangle("_Znot_valid!"), "_Znot_valid!");
    EXPECT_EQ(demangle("_ZN5outer5inner5twiceIiEET_S2_"), "int outer::inner::twice<int>(int)");
    EXPECT_EQ(demangle("_ZNK5outer5inner6Widget5valueEv"), "outer::inner::Widget::value() const");
    // Rust legacy: the hash component is dropped and the $…$ escapes decoded.
    EXPECT_EQ(demangle("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE"), "core::fmt::Formatter::pad");
    EXPECT_EQ(demangle("_ZN66_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..drop..Drop$GT$"
                       "4drop17h0123456789abcdefE"),
              "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop");
    EXPECT_EQ(demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h1111111111111111E"),
              "std::rt::lang_start::{{closure}}");
    // Java: JVM signatures without the return type; anything else that starts with L is kept.
    EXPECT_EQ(demangle("Ljava/lang/StringLatin1;equals([B[B)Z"),
              "java.lang.StringLatin1.equals(byte[], byte[])");
    EXPECT_EQ(demangle("Lcom/x/Y;run()V"), "com.x.Y.run()");
    EXPECT_EQ(demangle("Lcom/x/Y;put(ILjava/lang/Object;[[J)Ljava/lang/Object;"),
              "com.x.Y.put(int, java.lang.Object, long[][])");
    EXPECT_EQ(demangle("Lfoo"), "Lfoo");
    EXPECT_EQ(demangle("Lcom/x/Y;bad(Q)V"), "Lcom/x/Y;bad(Q)V");
    EXPECT_EQ(demangle("Lcom/x/Y;open(I"), "Lcom/x/Y;open(I");
    // Not a Rust hash: kept.
    EXPECT_EQ(demangle("_ZN3foo3barE"), "foo::bar");
}

}  // namespace
}  // namespace perfprof::sym
