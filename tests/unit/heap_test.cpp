// The heap profile's pure parts: the reachability mark over a fake address space, and the
// choice of allocator among a process's objects.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "heap/allocator.h"
#include "heap/reachability.h"

using namespace perfprof::heap;

namespace {

// A sparse address space of 8-byte words.
struct FakeMemory {
    std::map<uint64_t, uint64_t> words;
    void put(uint64_t addr, uint64_t value) { words[addr] = value; }
    ReadMemory reader() const {
        return [this](uint64_t addr, void* buf, size_t len) {
            if (addr >= 0x9000000) return false;  // unmapped
            std::memset(buf, 0, len);
            for (auto it = words.lower_bound(addr); it != words.end() && it->first < addr + len; ++it)
                std::memcpy(static_cast<char*>(buf) + (it->first - addr), &it->second, 8);
            return true;
        };
    }
};

std::vector<bool> mark(const FakeMemory& m, const std::vector<Block>& blocks, std::vector<Block> freed = {}) {
    return mark_reachable(blocks, {{0x1000, 0x2000}, {0x100000, 0x200000}}, m.reader(), std::move(freed));
}

}  // namespace

TEST(HeapReachability, FollowsPointersFromRootsThroughBlocks) {
    FakeMemory m;
    // Blocks in the heap region 0x100000-0x200000: A ← root, B ← A, C nothing, D ← C only.
    const std::vector<Block> blocks = {{0x100100, 64}, {0x100200, 64}, {0x100300, 64}, {0x100400, 64}};
    m.put(0x1008, 0x100100);    // a global points at A
    m.put(0x100110, 0x100200);  // A → B
    m.put(0x100308, 0x100400);  // C → D: both unreachable (D "indirectly lost")
    EXPECT_EQ(mark(m, blocks), (std::vector<bool>{true, true, false, false}));
}

TEST(HeapReachability, InteriorPointersCountAndEndsDoNot) {
    FakeMemory m;
    const std::vector<Block> blocks = {{0x100100, 64}, {0x100200, 64}};
    m.put(0x1010, 0x100100 + 63);  // inside A
    m.put(0x1018, 0x100200 + 64);  // one past B's end: not B
    EXPECT_EQ(mark(m, blocks), (std::vector<bool>{true, false}));
}

TEST(HeapReachability, FreedMemoryIsNoRoot) {
    FakeMemory m;
    const std::vector<Block> blocks = {{0x100100, 64}, {0x100200, 64}};
    m.put(0x100808, 0x100100);  // a stale pointer inside a freed block
    m.put(0x100900, 0x100200);  // the same outside any freed block: a root
    EXPECT_EQ(mark(m, blocks, {{0x100800, 32}}), (std::vector<bool>{false, true}));
}

TEST(HeapReachability, UnreadableRegionsAreSkipped) {
    FakeMemory m;
    const std::vector<Block> blocks = {{0x100100, 64}};
    m.put(0x1000, 0x100100);
    auto r = mark_reachable(blocks, {{0x8fff000, 0x9002000}, {0x1000, 0x1008}}, m.reader());
    EXPECT_EQ(r, (std::vector<bool>{true}));
    EXPECT_TRUE(mark_reachable({}, {{0x1000, 0x2000}}, m.reader()).empty());
}

TEST(HeapReachability, GlibcNextChunkHeaderIsNoPointerIntoTheBlock) {
    // A block of 1000 bytes lies in a chunk of 1008 starting 16 bytes before it: the next
    // chunk's header starts at +992, inside the block. The arena's pointer to that header
    // (its top chunk) does not reach the block; with a plain layout it does, as any inner
    // pointer would.
    FakeMemory m;
    const std::vector<Block> blocks = {{0x100100, 1000}, {0x100600, 300}};
    m.put(0x1010, 0x100100 + 992);
    m.put(0x1018, 0x100600 - 16 + 320);  // a 300-byte block's next header lies past its end
    m.put(0x1020, 0x100600 + 200);       // a real inner pointer
    EXPECT_EQ(mark(m, blocks), (std::vector<bool>{false, true}));
    EXPECT_EQ(mark_reachable(blocks, {{0x1000, 0x2000}}, m.reader(), {}, HeapLayout::Plain),
              (std::vector<bool>{true, true}));
}

TEST(HeapReachability, GlibcChunkSlackIsNoRoot) {
    // A block of 300 bytes lies in a chunk of 320, usable up to +312: the word at +304 is
    // slack, holding a stale pointer of an earlier block, and no root.
    FakeMemory m;
    const std::vector<Block> blocks = {{0x100100, 300}, {0x100400, 64}};
    m.put(0x100100 + 304, 0x100400);
    EXPECT_EQ(mark(m, blocks), (std::vector<bool>{false, false}));
    EXPECT_EQ(mark_reachable(blocks, {{0x100000, 0x200000}}, m.reader(), {}, HeapLayout::Plain),
              (std::vector<bool>{false, true}));
    m.put(0x100100 + 312, 0x100400);  // past the usable bytes: a root again
    EXPECT_EQ(mark(m, blocks), (std::vector<bool>{false, true}));
}

TEST(HeapAllocator, GlibcFromLibcWithExit) {
    const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
    Allocator a = choose_allocator({"/usr/bin/env", libc});
    EXPECT_EQ(a.name, "glibc");
    EXPECT_EQ(a.path, libc);
    EXPECT_EQ(a.exit_path, libc);
    EXPECT_NE(a.exit_offset, 0u);
    bool malloc = false, free = false, cxx = false;
    for (const Probe& p : a.probes) {
        malloc |= p.function == "malloc" && p.kind == FnKind::Malloc;
        free |= p.function == "free" && p.kind == FnKind::Free;
        cxx |= p.function[0] == '_';
        for (const Probe& q : a.probes)
            EXPECT_TRUE(&p == &q || p.offset != q.offset) << p.function << " " << q.function;
    }
    EXPECT_TRUE(malloc && free);
    EXPECT_FALSE(cxx);  // libstdc++'s operator new calls malloc
}

TEST(HeapAllocator, PreloadedTcmallocWinsAndBringsItsOperators) {
    const std::string tc = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4";
    Allocator a = choose_allocator({"/usr/bin/env", tc, "/lib/x86_64-linux-gnu/libc.so.6"});
    EXPECT_EQ(a.name, "tcmalloc");
    EXPECT_EQ(a.path, tc);
    EXPECT_EQ(a.exit_path, "/lib/x86_64-linux-gnu/libc.so.6");
    bool op_new = false;
    for (const Probe& p : a.probes) op_new |= p.function == "_Znwm" && p.kind == FnKind::Malloc;
    EXPECT_TRUE(op_new);
}

TEST(HeapAllocator, NoAllocatorWithoutMallocAndFree) {
    Allocator a = choose_allocator({"/nonexistent", "/etc/passwd"});
    EXPECT_TRUE(a.path.empty());
    EXPECT_EQ(a.exit_offset, 0u);
}
