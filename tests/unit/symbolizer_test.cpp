// sym::Symbolizer: why a frame is unknown, the -v lines saying so, observers told before a
// process's symbols go, and no state shared between two symbolizers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "shell.h"
#include "sym/symbolizer.h"

namespace perfprof::sym {
namespace {

namespace fs = std::filesystem;

// A pid no process has: its maps come from mmap() records only, files are opened as named.
constexpr uint32_t kGone = 0x3fffffff;

#define NEED_FIXTURES()                                      \
    if (!fs::exists(test::fixture(".ok"))) {                 \
        GTEST_SKIP() << "fixtures missing: run `make unit`"; \
    }

MapsLine mapping(uint64_t start, uint64_t end, uint64_t offset, const std::string& path) {
    MapsLine m;
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.perms = "r-xp";
    m.dev_major = 8;
    m.inode = 1;
    m.path = path;
    return m;
}

// `path` mapped at 0x10000 (file offset 0) in process kGone of `s`.
void map_file(Symbolizer& s, const std::string& path) {
    s.exec(kGone);
    s.mmap(kGone, mapping(0x10000, 0x20000, 0, path));
}

UnknownReason reason_at(Symbolizer& s, uint64_t addr) {
    Frame f;
    s.resolve(kGone, addr, f);
    return f.reason;
}

TEST(Symbolizer, ReasonNoMapping) {
    Symbolizer s;
    Frame f;
    EXPECT_FALSE(s.resolve(uint32_t(::getpid()), 8, f));
    EXPECT_EQ(f.reason, UnknownReason::NoMapping);
    EXPECT_EQ(f.dso, nullptr);
    EXPECT_STREQ(reason_text(f.reason), "no mapping");
}

TEST(Symbolizer, ReasonStripped) {
    NEED_FIXTURES();
    Symbolizer s;
    map_file(s, test::fixture("c_stripped"));
    // .text of the PIE starts at 0x1050: static functions have no name without .symtab.
    EXPECT_EQ(reason_at(s, 0x10000 + 0x1060), UnknownReason::Stripped);
    EXPECT_STREQ(reason_text(UnknownReason::Stripped), "stripped");
}

TEST(Symbolizer, ReasonNoSymbol) {
    NEED_FIXTURES();
    Symbolizer s;
    map_file(s, test::fixture("c_pie"));
    // The ELF header: the object has a .symtab, no symbol covers offset 0x10.
    EXPECT_EQ(reason_at(s, 0x10000 + 0x10), UnknownReason::NoSymbol);
    Frame f;
    // and a named frame has no reason.
    ASSERT_TRUE(s.resolve(kGone, 0x10000 + 0x1139, f));
    if (f.sym) {
        EXPECT_EQ(f.reason, UnknownReason::None);
    }
}

TEST(Symbolizer, ReasonUnreadable) {
    Symbolizer s;
    char path[] = "/tmp/symbolizer_test.XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "not an ELF file\n", 16), 16);
    ::close(fd);
    map_file(s, path);
    EXPECT_EQ(reason_at(s, 0x10004), UnknownReason::Unreadable);
    map_file(s, "/nonexistent/libgone.so");
    EXPECT_EQ(reason_at(s, 0x10004), UnknownReason::Unreadable);
    EXPECT_STREQ(reason_text(UnknownReason::Unreadable), "unreadable file");
    ::unlink(path);
}

// With -v, one line per (object, reason), on the log; without, nothing.
TEST(Symbolizer, VerboseSaysWhyOncePerObjectAndReason) {
    NEED_FIXTURES();
    char* buf = nullptr;
    size_t len = 0;
    FILE* log = ::open_memstream(&buf, &len);
    ASSERT_NE(log, nullptr);
    {
        Symbolizer quiet({.log = log});
        map_file(quiet, test::fixture("c_stripped"));
        reason_at(quiet, 0x11060);
        Symbolizer s({.verbose = 1, .log = log});
        map_file(s, test::fixture("c_stripped"));
        for (int i = 0; i < 3; i++) reason_at(s, 0x11060 + uint64_t(i));
        Frame f;
        s.resolve(kGone, 8, f);
        s.resolve(kGone, 16, f);
    }
    std::fclose(log);
    const std::string text(buf, len);
    std::free(buf);
    const std::string path = test::fixture("c_stripped");
    EXPECT_EQ(text, "symbols: " + path + ": stripped, frames shown as [" + path + "+offset]\n" +
                        "symbols: pid " + std::to_string(kGone) +
                        ": no mapping, frames shown as [unknown]\n");
}

struct Recorder final : ProcessObserver {
    void before_forget(uint32_t tgid) override { seen.push_back(tgid); }
    std::vector<uint32_t> seen;
};

TEST(Symbolizer, ObserversAreToldBeforeExitAndExec) {
    Symbolizer s;
    Recorder a, b;
    s.add_observer(&a);
    s.add_observer(&b);
    s.exit(7);
    s.remove_observer(&b);
    s.exec(8);
    EXPECT_EQ(a.seen, (std::vector<uint32_t>{7, 8}));
    EXPECT_EQ(b.seen, (std::vector<uint32_t>{7}));
    s.remove_observer(&a);
}

TEST(Symbolizer, ForgetDropsTheProcess) {
    Symbolizer s;
    s.prepare(uint32_t(::getpid()));
    EXPECT_EQ(s.processes().size(), 1u);
    s.exit(uint32_t(::getpid()));
    EXPECT_EQ(s.processes().size(), 0u);
}

// Objects are shared within one symbolizer and never between two.
TEST(Symbolizer, ObjectsAreItsOwn) {
    Symbolizer a, b;
    const std::string self = test::self_exe();
    auto a1 = a.objects().get(self);
    auto a2 = a.objects().get(self);
    auto b1 = b.objects().get(self);
    EXPECT_EQ(a1.get(), a2.get());
    EXPECT_NE(a1.get(), b1.get());
}

TEST(Symbolizer, BatchAnswersEachAddress) {
    Symbolizer s;
    const uint64_t ips[] = {8, reinterpret_cast<uint64_t>(&reason_text)};
    Frame out[2];
    s.symbolize(uint32_t(::getpid()), ips, out);
    EXPECT_EQ(out[0].reason, UnknownReason::NoMapping);
    ASSERT_NE(out[1].sym, nullptr);
    EXPECT_EQ(*out[1].sym, "perfprof::sym::reason_text(perfprof::sym::UnknownReason)");
}

}  // namespace
}  // namespace perfprof::sym
