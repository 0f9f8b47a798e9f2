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
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
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

// Not inlined, cloned nor merged (GCC); clang's sanitizer build compiles at -O0.
#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

using Leaf = int (*)(void*);
int capture_leaf(void* arg) {
    capture_both(static_cast<Capture*>(arg));
    return 1;
}

NOIPA int chain3(Leaf leaf, void* arg) {
    volatile char pad[56];
    pad[0] = 3;
    const int r = leaf(arg);
    return r + pad[0];
}
NOIPA int chain2(Leaf leaf, void* arg) {
    volatile char pad[200];
    pad[0] = 2;
    const int r = chain3(leaf, arg);
    return r + pad[0];
}
NOIPA int chain1(Leaf leaf, void* arg) {
    volatile char pad[8];
    pad[0] = 1;
    const int r = chain2(leaf, arg);
    return r + pad[0];
}

// A recursion `depth` deep, then the leaf.
NOIPA int deep(int depth, Leaf leaf, void* arg) {
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

// Frames whose CFA is rbp-based: a variable-length frame (alloca makes GCC keep a frame
// pointer even with -fomit-frame-pointer), and a function built with frame pointers, between
// frames without; their caller's rbp comes from the rules of the frames below them.
NOIPA int with_alloca(int n, Leaf leaf, void* arg) {
    volatile char* p = static_cast<volatile char*>(__builtin_alloca(size_t(n)));
    p[0] = char(n);
    const int r = chain3(leaf, arg);
    return r + p[0];
}
extern "C" WITH_FRAME_POINTER NOIPA int with_frame_pointer(Leaf leaf, void* arg) {
    volatile char pad[40];
    pad[0] = 5;
    const int r = with_alloca(int(reinterpret_cast<uintptr_t>(arg) % 64) + 100, leaf, arg);
    return r + pad[0];
}

int with_frame_pointer_leaf(void* arg) {
    return with_frame_pointer(capture_leaf, arg);
}

TEST(HeapAgentUnwind, RbpBasedFrames) {
    Capture c;
    chain2(with_frame_pointer_leaf, &c);
    expect_same_as_libgcc(c);
    EXPECT_GE(frame_in(c, reinterpret_cast<const void*>(&with_alloca)), 0);
    EXPECT_GE(frame_in(c, reinterpret_cast<const void*>(&with_frame_pointer)), 0);
    EXPECT_GE(frame_in(c, reinterpret_cast<const void*>(&chain2)), 0);
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
    uint64_t two[2];
    EXPECT_EQ(pph_unwind(pph_frame{c.ours[1], 0, 0}, two, 2), 1);  // a frame without a stack
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

NOIPA void sort_some() {
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
    // Between the comparator and sort_some lie libc's frames (the sanitizers' runtime's instead,
    // clang's or gcc's libasan, where it replaces qsort).
    int in_libc = 0;
    for (int i = 1; i < sorter; i++) {
        Dl_info info;
        if (!dladdr(reinterpret_cast<void*>(c.ours[i]), &info) || !info.dli_fname) continue;
        const std::string object = info.dli_fname;
        in_libc += object.find("libc.so") != std::string::npos || object.find("libclang_rt") != std::string::npos ||
                   object.find("libasan") != std::string::npos;
    }
    EXPECT_GT(in_libc, 0);
}

// ---------------------------------------------------------------- through a signal handler

Capture signal_capture;

void capture_in_handler(int) {
    capture_both(&signal_capture);
}

NOIPA int raise_leaf(void*) {
    const int r = raise(SIGUSR1);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

// The kernel's signal frame (glibc's trampoline: its CFI is an expression) is read as the kernel
// wrote it, and the walk goes on in the interrupted code, as libgcc's does.
TEST(HeapAgentUnwind, ThroughSignalHandler) {
    struct sigaction sa = {}, old = {};
    sa.sa_handler = capture_in_handler;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    signal_capture.n_ours = 0;
    chain1(raise_leaf, nullptr);
    sigaction(SIGUSR1, &old, nullptr);
    const Capture& c = signal_capture;
    expect_same_as_libgcc(c);
    EXPECT_GE(frame_in(c, reinterpret_cast<const void*>(&raise_leaf)), 2);
    EXPECT_GE(frame_in(c, reinterpret_cast<const void*>(&chain3)), 3);
}

// ---------------------------------------------------------------- a dlopen'd library

std::string workload_library(const char* name) {
    return (std::filesystem::path(perfprof::test::self_exe()).parent_path() / "workloads" / name).string();
}
std::string callback_library() {
    return workload_library("libcfi_callback.so");
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
    pph_unwind_invalidate();  // forgets the address as one in no object: a dlopen may map it again
    // And the walks of this binary still work.
    Capture again;
    chain1(capture_leaf, &again);
    expect_same_as_libgcc(again);
}

using Outer = int (*)(Leaf, void*);
NOIPA int call_outer(Outer outer, Capture* c) {
    volatile char pad[72];
    pad[0] = 4;
    const int r = outer(capture_leaf, c);
    return r + pad[0];
}

// A library without .eh_frame_hdr, built with frame pointers: followed by its rbp chain, back
// into this binary's frames (libgcc's walk, which needs the table, ends in it).
TEST(HeapAgentUnwind, FramePointersWithoutSearchTable) {
    void* h = dlopen(workload_library("libcfi_fponly.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_TRUE(h) << dlerror();
    auto outer = reinterpret_cast<Outer>(dlsym(h, "fp_outer"));
    void* inner = dlsym(h, "fp_inner");
    ASSERT_TRUE(outer && inner);
    Capture c;
    call_outer(outer, &c);
    ASSERT_GE(c.n_ours, 5);
    ASSERT_GE(c.n_theirs, 2);
    EXPECT_EQ(c.ours[0], c.theirs[1]);  // the leaf's return address, in capture_leaf
    // Then fp_inner and fp_outer (their symbols: libgcc cannot find their functions), and the
    // call in this test, where libgcc's walk does not get.
    Dl_info info;
    ASSERT_TRUE(dladdr(reinterpret_cast<void*>(c.ours[1] - 1), &info));
    EXPECT_EQ(info.dli_saddr, inner);
    ASSERT_TRUE(dladdr(reinterpret_cast<void*>(c.ours[2] - 1), &info));
    EXPECT_EQ(info.dli_saddr, reinterpret_cast<void*>(outer));
    EXPECT_EQ(function_of(c.ours[3]), reinterpret_cast<const void*>(&call_outer));
    EXPECT_GT(c.n_ours, c.n_theirs + 2) << "no further than libgcc";
    dlclose(h);
    pph_unwind_invalidate();
}

// An address in no object (JIT code, a stray value) ends the walk. It is remembered: the next
// walk reaching it asks the loader nothing, until the objects change.
TEST(HeapAgentUnwind, AddressInNoObject) {
    std::vector<uint64_t> heap(64, 0);
    const uint64_t nowhere = reinterpret_cast<uint64_t>(heap.data()) + 8;
    uint64_t stack[16] = {};
    const pph_frame f{nowhere, reinterpret_cast<uint64_t>(stack), 0};
    uint64_t out[4];
    struct pph_unwind_stats s0, s1, s2, s3;
    pph_unwind_stats(&s0);
    EXPECT_EQ(pph_unwind(f, out, 4), 1);
    pph_unwind_stats(&s1);
    EXPECT_EQ(pph_unwind(f, out, 4), 1);
    pph_unwind_stats(&s2);
    EXPECT_EQ(s1.misses - s0.misses, 1u);
    EXPECT_EQ(s2.misses - s1.misses, 0u) << "the address was looked up again";
    EXPECT_EQ(s2.hits - s1.hits, 1u);
    // A library loaded since: the objects are read again, and so is the address.
    void* h = dlopen(callback_library().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_TRUE(h) << dlerror();
    auto outer = reinterpret_cast<int (*)(Leaf, void*)>(dlsym(h, "cb_outer"));
    Capture c;
    outer(capture_leaf, &c);
    expect_same_as_libgcc(c);
    pph_unwind_stats(&s2);
    EXPECT_EQ(pph_unwind(f, out, 4), 1);
    pph_unwind_stats(&s3);
    EXPECT_EQ(s3.misses - s2.misses, 1u);
    EXPECT_EQ(s3.hits - s2.hits, 0u);
    dlclose(h);
    pph_unwind_invalidate();
}

// A forked child walks with what it inherited, and reads its objects anew when it loads one.
TEST(HeapAgentUnwind, AfterFork) {
    Capture parent;
    chain1(capture_leaf, &parent);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        Capture c;
        chain1(capture_leaf, &c);
        bool ok = c.n_ours + 1 == c.n_theirs && !std::memcmp(c.ours, c.theirs + 1, sizeof(uint64_t) * c.n_ours);
        void* h = dlopen(callback_library().c_str(), RTLD_NOW | RTLD_LOCAL);
        auto outer = h ? reinterpret_cast<int (*)(Leaf, void*)>(dlsym(h, "cb_outer")) : nullptr;
        if (outer) {
            outer(capture_leaf, &c);
            ok = ok && c.n_ours + 1 == c.n_theirs && !std::memcmp(c.ours, c.theirs + 1, sizeof(uint64_t) * c.n_ours);
        }
        _exit(ok && outer ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's walks differ from libgcc's";
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

// pph_unwind_sp: the same pcs as pph_unwind, and each frame's stack pointer beside its pc: the
// walk's start first, then growing (each caller's frame lies above its callee's), every one on
// this thread's stack, the last below the stack's top.
extern "C" WITH_FRAME_POINTER __attribute__((noinline)) int capture_sps(uint64_t* pcs, uint64_t* sps, int max,
                                                                      uint64_t* start_sp) {
    const pph_frame f = PPH_CALLER_FRAME();
    *start_sp = f.sp;
    const int n = pph_unwind_sp(f, pcs, sps, max);
    __asm__ volatile("" ::: "memory");
    return n;
}

TEST(HeapAgentUnwind, StackPointersBesidePcs) {
    uint64_t pcs[kMax], sps[kMax], plain[kMax], start = 0;
    const int n = capture_sps(pcs, sps, kMax, &start);
    const int m = capture_ours(plain, kMax);
    ASSERT_GE(n, 3);
    EXPECT_EQ(n, m);
    for (int i = 1; i < n; i++) EXPECT_EQ(pcs[i], plain[i]) << "frame " << i;  // [0]: two call sites
    EXPECT_EQ(sps[0], start);
    const uint64_t here = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
    EXPECT_LT(sps[0], here);  // the test's own frame lies above capture_sps's
    for (int i = 1; i < n; i++) EXPECT_GT(sps[i], sps[i - 1]) << "frame " << i;
    pthread_attr_t a;
    void* low = nullptr;
    size_t size = 0;
    ASSERT_EQ(pthread_getattr_np(pthread_self(), &a), 0);
    pthread_attr_getstack(&a, &low, &size);
    pthread_attr_destroy(&a);
    EXPECT_LE(sps[n - 1], reinterpret_cast<uint64_t>(low) + size);
}
