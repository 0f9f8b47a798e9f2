// lib/heap/agent/unwind: the heap agent's in-process walker. Walks from a frame-pointer capture
// (as the agent's hooks take it) through this binary's code, built -O2 without frame pointers,
// through libc (a qsort comparator) and through a dlopen'd library, compared frame by frame with
// libgcc's _Unwind_Backtrace; the library's rules forgotten after dlclose; walks from four
// threads while the rules are invalidated. Then the parser: its rule at every FDE's addresses of
// every loaded object against perf-prof's own CFI compiler (lib/unwind/cfi_table), hand-built
// programs, and truncated or random bytes (under the sanitizers in sanitize-quick: never a read
// outside them).
#include "heap/agent/unwind.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <link.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "heap/agent/unwind_cfi.h"
#include "shell.h"
#include "unwind/cfi_table.h"

namespace {

constexpr int kMax = 128;

// ---------------------------------------------------------------- captures

struct Capture {
    uint64_t ours[kMax];
    int n_ours = 0;
    uint64_t theirs[kMax];  // libgcc's: [0] is in capture_both itself
    int n_theirs = 0;
};

_Unwind_Reason_Code collect(_Unwind_Context* ctx, void* arg) {
    auto* c = static_cast<Capture*>(arg);
    if (c->n_theirs == kMax) return _URC_END_OF_STACK;
    // libgcc reports the outermost frame's caller (its return address undefined) as address 0.
    if (const uint64_t ip = _Unwind_GetIP(ctx)) c->theirs[c->n_theirs++] = ip;
    return _URC_NO_REASON;
}

// Built with frame pointers, as the agent's hooks are (clang's sanitizer build has them
// everywhere and no `optimize` attribute).
#if defined(__clang__)
#define WITH_FRAME_POINTER
#else
#define WITH_FRAME_POINTER __attribute__((optimize("no-omit-frame-pointer")))
#endif

// Our walk from the caller's frame, then libgcc's from here: theirs[i + 1] is ours[i].
extern "C" WITH_FRAME_POINTER __attribute__((noinline)) void capture_both(Capture* c) {
    c->n_ours = pph_unwind(PPH_CALLER_FRAME(), c->ours, kMax);
    c->n_theirs = 0;
    _Unwind_Backtrace(collect, c);
    __asm__ volatile("" ::: "memory");
}

extern "C" WITH_FRAME_POINTER __attribute__((noinline)) int capture_ours(uint64_t* out, int max) {
    const int n = pph_unwind(PPH_CALLER_FRAME(), out, max);
    __asm__ volatile("" ::: "memory");
    return n;
}

// The function holding return address `ra`, by libgcc's FDE lookup.
const void* function_of(uint64_t ra) {
    return _Unwind_FindEnclosingFunction(reinterpret_cast<void*>(ra - 1));
}

void expect_same_as_libgcc(const Capture& c) {
    ASSERT_GE(c.n_ours, 4);
    ASSERT_EQ(c.n_ours + 1, c.n_theirs) << "walks of different lengths";
    for (int i = 0; i < c.n_ours; i++)
        EXPECT_EQ(c.ours[i], c.theirs[i + 1]) << "frame " << i << " differs from _Unwind_Backtrace's";
}

// Frame i of the walk lies in function f.
int frame_in(const Capture& c, const void* f) {
    for (int i = 0; i < c.n_ours; i++)
        if (function_of(c.ours[i]) == f) return i;
    return -1;
}

// ---------------------------------------------------------------- a chain without frame pointers

using Leaf = int (*)(void*);
int capture_leaf(void* arg) {
    capture_both(static_cast<Capture*>(arg));
    return 1;
}

__attribute__((noipa)) int chain3(Leaf leaf, void* arg) {
    volatile char pad[56];
    pad[0] = 3;
    const int r = leaf(arg);
    return r + pad[0];
}
__attribute__((noipa)) int chain2(Leaf leaf, void* arg) {
    volatile char pad[200];
    pad[0] = 2;
    const int r = chain3(leaf, arg);
    return r + pad[0];
}
__attribute__((noipa)) int chain1(Leaf leaf, void* arg) {
    volatile char pad[8];
    pad[0] = 1;
    const int r = chain2(leaf, arg);
    return r + pad[0];
}

// A recursion `depth` deep, then the leaf.
__attribute__((noipa)) int deep(int depth, Leaf leaf, void* arg) {
    volatile char pad[24];
    pad[0] = char(depth);
    const int r = depth <= 1 ? leaf(arg) : deep(depth - 1, leaf, arg);
    return r + pad[0];
}

TEST(HeapAgentUnwind, ChainWithoutFramePointers) {
    // Twice from the same call site: the second walk takes every rule from the cache.
    struct pph_unwind_stats before[2], after[2];
    Capture c[2];
    volatile int rounds = 2;  // not unrolled: one call site
    for (int round = 0; round < rounds; round++) {
        pph_unwind_stats(&before[round]);
        chain1(capture_leaf, &c[round]);
        pph_unwind_stats(&after[round]);
    }
    for (const Capture& k : c) {
        expect_same_as_libgcc(k);
        // Innermost first: the leaf, chain3, chain2, chain1.
        EXPECT_EQ(function_of(k.ours[0]), reinterpret_cast<const void*>(&capture_leaf));
        EXPECT_EQ(function_of(k.ours[1]), reinterpret_cast<const void*>(&chain3));
        EXPECT_EQ(function_of(k.ours[2]), reinterpret_cast<const void*>(&chain2));
        EXPECT_EQ(function_of(k.ours[3]), reinterpret_cast<const void*>(&chain1));
    }
    EXPECT_EQ(after[1].walks - before[1].walks, 1u);
    EXPECT_EQ(after[1].frames - before[1].frames, uint64_t(c[1].n_ours));
    EXPECT_EQ(after[1].misses, before[1].misses);
    EXPECT_EQ(after[1].hits - before[1].hits, uint64_t(c[1].n_ours));  // _start's too: outermost
}

struct Bounded {
    uint64_t out[kMax + 1];
    int max, n;
};
int capture_bounded(void* arg) {
    auto* b = static_cast<Bounded*>(arg);
    b->n = capture_ours(b->out, b->max);
    return 1;
}

TEST(HeapAgentUnwind, MaxAndDepth) {
    Capture c;
    deep(40, capture_leaf, &c);
    expect_same_as_libgcc(c);
    int in_deep = 0;
    for (int i = 0; i < c.n_ours; i++) in_deep += function_of(c.ours[i]) == reinterpret_cast<const void*>(&deep);
    EXPECT_EQ(in_deep, 40);
    for (int max : {1, 2, 5, 17, 44}) {
        Bounded b;
        b.max = max;
        b.out[max] = 0x5a5a;
        deep(40, capture_bounded, &b);
        EXPECT_EQ(b.n, max);
        EXPECT_EQ(b.out[max], 0x5a5au) << "wrote past max";
    }
    uint64_t one;
    EXPECT_EQ(pph_unwind(pph_frame{0, 0, 0}, &one, 0), 0);
    EXPECT_EQ(pph_unwind(pph_frame{0, 0, 0}, &one, 1), 1);  // out[0] only: no rule at address 0
}

// ---------------------------------------------------------------- through libc

Capture qsort_capture;
bool qsort_captured;

int compare_and_capture(const void* a, const void* b) {
    if (!qsort_captured) {
        capture_both(&qsort_capture);
        qsort_captured = true;
    }
    return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

__attribute__((noipa)) void sort_some() {
    int v[32];
    for (int i = 0; i < 32; i++) v[i] = (i * 7919) % 32;
    qsort(v, 32, sizeof v[0], compare_and_capture);
    __asm__ volatile("" ::: "memory");
}

TEST(HeapAgentUnwind, ThroughLibcQsort) {
    qsort_captured = false;
    sort_some();
    ASSERT_TRUE(qsort_captured);
    const Capture& c = qsort_capture;
    expect_same_as_libgcc(c);
    const int sorter = frame_in(c, reinterpret_cast<const void*>(&sort_some));
    ASSERT_GT(sorter, 1) << "the walk did not get past qsort";
    // The frames between the comparator and sort_some are libc's.
    Dl_info info;
    ASSERT_TRUE(dladdr(reinterpret_cast<void*>(c.ours[sorter - 1]), &info));
    EXPECT_NE(std::string(info.dli_fname).find("libc.so"), std::string::npos) << info.dli_fname;
}

// ---------------------------------------------------------------- a dlopen'd library

std::string callback_library() {
    return (std::filesystem::path(perfprof::test::self_exe()).parent_path() / "workloads/libcfi_callback.so")
        .string();
}

TEST(HeapAgentUnwind, DlopenedLibraryThenDlclose) {
    void* h = dlopen(callback_library().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_TRUE(h) << dlerror();
    using Outer = int (*)(Leaf, void*);
    auto outer = reinterpret_cast<Outer>(dlsym(h, "cb_outer"));
    void* inner = dlsym(h, "cb_inner");
    ASSERT_TRUE(outer && inner);
    struct pph_unwind_stats before;
    pph_unwind_stats(&before);
    Capture c;
    outer(capture_leaf, &c);
    expect_same_as_libgcc(c);
    EXPECT_EQ(function_of(c.ours[1]), inner);
    EXPECT_EQ(function_of(c.ours[2]), reinterpret_cast<const void*>(outer));
    struct pph_unwind_stats after;
    pph_unwind_stats(&after);
    EXPECT_GT(after.refreshes, before.refreshes) << "the new library was found without reading the objects";

    // A walk from inside cb_inner over a stack of our own: its rule finds the next return
    // address there (max 2: the walk goes no further than that word).
    const uint64_t lib_ra = c.ours[1];
    uint64_t stack[16];
    for (uint64_t& w : stack) w = c.ours[3];
    uint64_t out[2];
    const pph_frame f{lib_ra, reinterpret_cast<uint64_t>(stack), 0};
    ASSERT_EQ(pph_unwind(f, out, 2), 2);
    EXPECT_EQ(out[1], c.ours[3]);

    dlclose(h);
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(lib_ra), &info)) GTEST_SKIP() << "the library stayed loaded";
    pph_unwind_invalidate();
    EXPECT_EQ(pph_unwind(f, out, 2), 1) << "a rule of the unloaded library was used";
    // And the walks of this binary still work.
    Capture again;
    chain1(capture_leaf, &again);
    expect_same_as_libgcc(again);
}

// ---------------------------------------------------------------- threads

TEST(HeapAgentUnwind, ConcurrentWalksWhileInvalidated) {
    std::atomic<int> mismatches{0}, walks{0};
    auto worker = [&](int depth) {
        // Each walk the same as libgcc's of the same stack.
        Capture c;
        for (int i = 0; i < 5000; i++) {
            deep(depth, capture_leaf, &c);
            if (c.n_ours + 1 != c.n_theirs || std::memcmp(c.ours, c.theirs + 1, sizeof(uint64_t) * c.n_ours) != 0)
                mismatches++;
            walks++;
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) threads.emplace_back(worker, 3 + 5 * t);
    // Meanwhile the rules and objects are forgotten again and again.
    for (int i = 0; i < 200 && walks < 4 * 5000; i++) {
        pph_unwind_invalidate();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_GT(walks.load(), 1000);
}

}  // namespace
