#include "sym/jit_map.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

using perfprof::sym::JitMap;
using perfprof::sym::JitMapLine;
using perfprof::sym::JitSymbols;
using perfprof::sym::parse_jit_map_line;

namespace {

std::string name_at(const JitSymbols& s, uint64_t addr, uint64_t* start = nullptr) {
    uint64_t st = 0, size = 0;
    const std::string* n = s.find(addr, &st, &size);
    if (start) *start = st;
    return n ? *n : std::string("-");
}

std::string name_at(JitMap& m, uint64_t addr) {
    uint64_t st = 0, size = 0;
    const std::string* n = m.find(addr, &st, &size);
    return n ? *n : std::string("-");
}

// The test process's own map file, as JitMap(getpid()) reads it; removed at the end.
struct OwnMap {
    std::string path = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
    OwnMap() { ::unlink(path.c_str()); }
    ~OwnMap() { ::unlink(path.c_str()); }
    void write(const std::string& text, const char* mode = "a") const {
        FILE* f = std::fopen(path.c_str(), mode);
        ASSERT_NE(f, nullptr);
        std::fputs(text.c_str(), f);
        std::fclose(f);
    }
};

}  // namespace

TEST(JitMapLine, ParsesPerfFormat) {
    JitMapLine l;
    ASSERT_TRUE(parse_jit_map_line("7f0012345000 1a0 hotLoop", l));
    EXPECT_EQ(l.start, 0x7f0012345000u);
    EXPECT_EQ(l.size, 0x1a0u);
    EXPECT_EQ(l.name, "hotLoop");
    ASSERT_TRUE(parse_jit_map_line("0x10 0X20 LazyCompile:*hot loop /a b.js:3\r", l));
    EXPECT_EQ(l.start, 0x10u);
    EXPECT_EQ(l.size, 0x20u);
    EXPECT_EQ(l.name, "LazyCompile:*hot loop /a b.js:3");
    ASSERT_TRUE(parse_jit_map_line("10\t20\t\tname  ", l));
    EXPECT_EQ(l.name, "name  ");
}

TEST(JitMapLine, RejectsBadLines) {
    JitMapLine l;
    for (const char* bad : {"", "zz 10 x", "10 0 x", "10 20", "10 20 ", "10 20x name", "0x 20 name",
                            "ffffffffffffffff 2 x", "10000000000000000 2 x", " 10"})
        EXPECT_FALSE(parse_jit_map_line(bad, l)) << bad;
    // A range ends below 2^64 (the last byte stays out: its end would not fit).
    EXPECT_TRUE(parse_jit_map_line("fffffffffffffff0 f top", l));
    EXPECT_FALSE(parse_jit_map_line("fffffffffffffff0 10 top", l));
}

TEST(JitSymbols, LaterLinesWin) {
    JitSymbols s;
    EXPECT_EQ(s.add_text("1000 100 A\n1080 100 B\nbad line\n1010 10 C\n"), 3u);
    uint64_t start = 0;
    EXPECT_EQ(name_at(s, 0xfff), "-");
    EXPECT_EQ(name_at(s, 0x1000, &start), "A");
    EXPECT_EQ(start, 0x1000u);
    EXPECT_EQ(name_at(s, 0x100f), "A");
    EXPECT_EQ(name_at(s, 0x1010), "C");
    EXPECT_EQ(name_at(s, 0x101f), "C");
    // The rest of A keeps A's start: offsets count from the function.
    EXPECT_EQ(name_at(s, 0x1020, &start), "A");
    EXPECT_EQ(start, 0x1000u);
    EXPECT_EQ(name_at(s, 0x107f), "A");
    EXPECT_EQ(name_at(s, 0x1080, &start), "B");
    EXPECT_EQ(start, 0x1080u);
    EXPECT_EQ(name_at(s, 0x117f), "B");
    EXPECT_EQ(name_at(s, 0x1180), "-");
    // Code moved over all of them: one name for the whole range, nothing left of the others.
    s.add_text("f00 400 D\n");
    for (uint64_t a : {0xf00, 0x1000, 0x1010, 0x1080, 0x12ff}) EXPECT_EQ(name_at(s, a), "D") << a;
    EXPECT_EQ(s.pieces(), 1u);
}

TEST(JitSymbols, MemoryIsBounded) {
    JitSymbols s;
    std::string text;
    for (size_t i = 0; i < JitSymbols::kMaxPieces + 10; i++) text += std::to_string(i * 16) + " 8 f\n";
    s.add_text(text);
    EXPECT_TRUE(s.full());
    EXPECT_LE(s.pieces(), JitSymbols::kMaxPieces);
    EXPECT_GT(s.pieces(), JitSymbols::kMaxPieces - 4);
    s.clear();
    EXPECT_FALSE(s.full());
    EXPECT_EQ(s.pieces(), 0u);
}

TEST(JitMap, ReadsAgainWhenTheFileGrows) {
    OwnMap f;
    JitMap m{int(::getpid())};
    EXPECT_EQ(m.path(), f.path);
    EXPECT_EQ(name_at(m, 0x5000), "-");  // no file yet
    f.write("5000 100 first\n", "w");
    EXPECT_EQ(name_at(m, 0x5000), "first");
    EXPECT_EQ(name_at(m, 0x6000), "-");
    f.write("6000 100 second\n5000 80 first moved over\n7000 10 no newline yet");
    EXPECT_EQ(name_at(m, 0x6000), "second");
    EXPECT_EQ(name_at(m, 0x5000), "first moved over");
    EXPECT_EQ(name_at(m, 0x5080), "first");
    EXPECT_EQ(name_at(m, 0x7000), "no newline yet");
    // The unfinished line is read again, whole, once it is.
    f.write(" (done)\n");
    EXPECT_EQ(name_at(m, 0x8000), "-");
    EXPECT_EQ(name_at(m, 0x7000), "no newline yet (done)");
    EXPECT_EQ(m.symbols().pieces(), 4u);
}

TEST(JitMap, StartsOverOnAnotherFile) {
    OwnMap f;
    JitMap m{int(::getpid())};
    f.write("5000 100 old\n", "w");
    EXPECT_EQ(name_at(m, 0x5000), "old");
    ::unlink(f.path.c_str());
    f.write("6000 100 new\n", "w");
    EXPECT_EQ(name_at(m, 0x6000), "new");
    EXPECT_EQ(name_at(m, 0x5000), "-");
}

TEST(JitMap, SkipsAGiantLine) {
    OwnMap f;
    f.write("1000 10 " + std::string(3u << 20, 'x') + "\n2000 10 after\n", "w");
    JitMap m{int(::getpid())};
    EXPECT_EQ(name_at(m, 0x2000), "after");
    EXPECT_EQ(name_at(m, 0x1000), "-");
}

TEST(JitMap, NeverBlocksOnAFifo) {
    OwnMap f;
    ASSERT_EQ(::mkfifo(f.path.c_str(), 0600), 0);
    JitMap m{int(::getpid())};
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(name_at(m, 0x5000), "-");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(JitMap, RefusesAFileOfAnotherUser) {
    OwnMap f;
    f.write("5000 100 planted\n", "w");
    // Neither root, nor perf-prof's user, nor the process's (this test's) user.
    const uid_t other = ::geteuid() == 54321 ? 54322 : 54321;
    if (::chown(f.path.c_str(), other, other) != 0) GTEST_SKIP() << "chown needs root";
    JitMap m{int(::getpid())};
    EXPECT_EQ(name_at(m, 0x5000), "-");
    ASSERT_EQ(::chown(f.path.c_str(), ::geteuid(), ::getegid()), 0);
    EXPECT_EQ(name_at(m, 0x5000), "planted");
}
