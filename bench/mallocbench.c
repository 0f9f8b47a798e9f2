// Malloc-heavy workload for bench/heap_bench.py: a known number of malloc-family calls through
// four call paths, a known set of leaked objects and some memory still reachable at exit.
//
//   mallocbench [-n CALLS] [-a LEAKS_A] [-b LEAKS_B] [-r REACHABLE] [-w]
//
// The work is a loop over four paths, in turn (each a chain of functions of its own, so that a
// heap profiler sees four distinct stacks):
//   small    malloc(16..64) into a ring of 64 live objects, freeing the one it replaces (2 calls)
//   medium   malloc(512..4096), touched, freed at once (2 calls)
//   calloc   calloc(4, 32), freed (2 calls)
//   realloc  malloc(32), realloc to 256, realloc to 1024, free (4 calls)
// until CALLS malloc/calloc/realloc/free calls are made (default 1,000,000; free(NULL) counts).
// Before the loop it leaks, from two more paths, LEAKS_A objects of LEAK_A_SIZE bytes and LEAKS_B
// objects of LEAK_B_SIZE bytes (defaults 20 and 5): their pointers are dropped, nothing points to
// them. It also keeps REACHABLE objects of REACHABLE_SIZE bytes (default 8) in a global array
// until exit: still reachable, not leaked. Every block is filled, so none holds a stale pointer.
//
// -w: wait for a line (or EOF) on stdin before the work, so that a profiler can attach first.
//
// At the end one line on stdout:
//   calls=N leaked_bytes=B leaked_objects=O reachable_bytes=R reachable_objects=Q seconds=S rate=C
// (seconds: the work's wall time, leaks and the loop; rate: calls per second).
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEAK_A_SIZE 100
#define LEAK_B_SIZE 4000
#define REACHABLE_SIZE 2048
#define RING 64

#define NOINLINE __attribute__((noinline))

// Keeps the compiler from eliding a malloc/free pair or a store: the pointer escapes.
static inline void escape(void* p) {
    __asm__ volatile("" : : "r"(p) : "memory");
}

static uint64_t g_calls;
static volatile uint64_t g_sink;  // work after each call keeps the frames (no tail calls)
static void* g_ring[RING];
void* g_reachable[4096];  // global, so that leak checkers see these blocks as reachable

static void* counted_malloc(size_t n) {
    ++g_calls;
    void* p = malloc(n);
    if (!p) abort();
    memset(p, 0xa5, n);
    escape(p);
    return p;
}

static void counted_free(void* p) {
    ++g_calls;
    free(p);
}

// ---- the leaks: two paths, the pointers dropped

NOINLINE static void leak_a_alloc(void) {
    void* p = counted_malloc(LEAK_A_SIZE);
    g_sink += (uintptr_t)p & 1;
}

NOINLINE static void leak_a_path(int n) {
    for (int i = 0; i < n; ++i) leak_a_alloc();
    g_sink++;
}

NOINLINE static void leak_b_alloc(void) {
    void* p = counted_malloc(LEAK_B_SIZE);
    g_sink += (uintptr_t)p & 1;
}

NOINLINE static void leak_b_inner(int n) {
    for (int i = 0; i < n; ++i) leak_b_alloc();
    g_sink++;
}

NOINLINE static void leak_b_path(int n) {
    leak_b_inner(n);
    g_sink++;
}

NOINLINE static void keep_reachable(int n) {
    for (int i = 0; i < n; ++i) g_reachable[i] = counted_malloc(REACHABLE_SIZE);
    g_sink++;
}

// ---- the four working paths

NOINLINE static void small_alloc(uint64_t i) {
    void** slot = &g_ring[i % RING];
    counted_free(*slot);
    *slot = counted_malloc(16 + (i % 4) * 16);
    g_sink++;
}

NOINLINE static void small_path(uint64_t i) {
    small_alloc(i);
    g_sink++;
}

NOINLINE static void medium_alloc(uint64_t i) {
    void* p = counted_malloc(512 + (i % 8) * 512);
    counted_free(p);
    g_sink++;
}

NOINLINE static void medium_mid(uint64_t i) {
    medium_alloc(i);
    g_sink++;
}

NOINLINE static void medium_path(uint64_t i) {
    medium_mid(i);
    g_sink++;
}

NOINLINE static void calloc_path(void) {
    ++g_calls;
    void* p = calloc(4, 32);
    if (!p) abort();
    escape(p);
    counted_free(p);
    g_sink++;
}

NOINLINE static void* grow(void* p, size_t n) {
    ++g_calls;
    void* q = realloc(p, n);
    if (!q) abort();
    memset(q, 0x5a, n);
    escape(q);
    return q;
}

NOINLINE static void realloc_path(void) {
    void* p = counted_malloc(32);
    p = grow(p, 256);
    p = grow(p, 1024);
    counted_free(p);
    g_sink++;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long arg(const char* s) {
    char* end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0) {
        fprintf(stderr, "mallocbench: bad number '%s'\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char** argv) {
    uint64_t calls = 1000000;
    long leaks_a = 20, leaks_b = 5, reachable = 8;
    int wait = 0, c;
    while ((c = getopt(argc, argv, "n:a:b:r:w")) != -1) {
        switch (c) {
            case 'n':
                calls = (uint64_t)arg(optarg);
                break;
            case 'a':
                leaks_a = arg(optarg);
                break;
            case 'b':
                leaks_b = arg(optarg);
                break;
            case 'r':
                reachable = arg(optarg);
                if (reachable > 4096) reachable = 4096;
                break;
            case 'w':
                wait = 1;
                break;
            default:
                fprintf(stderr,
                        "usage: mallocbench [-n CALLS] [-a LEAKS_A] [-b LEAKS_B] [-r REACHABLE] [-w]\n");
                return 2;
        }
    }
    if (wait) {
        char line[64];
        if (!fgets(line, sizeof line, stdin)) clearerr(stdin);
    }
    // stdout's buffer now, before the timed part and the leaks.
    static char outbuf[512];
    setvbuf(stdout, outbuf, _IOLBF, sizeof outbuf);

    double t0 = now();
    leak_a_path((int)leaks_a);
    leak_b_path((int)leaks_b);
    keep_reachable((int)reachable);
    for (uint64_t i = 0; g_calls < calls; ++i) {
        switch (i % 4) {
            case 0:
                small_path(i);
                break;
            case 1:
                medium_path(i);
                break;
            case 2:
                calloc_path();
                break;
            default:
                realloc_path();
                break;
        }
    }
    for (int i = 0; i < RING; ++i) {
        counted_free(g_ring[i]);
        g_ring[i] = NULL;
    }
    double dt = now() - t0;
    printf(
        "calls=%llu leaked_bytes=%ld leaked_objects=%ld reachable_bytes=%ld reachable_objects=%ld "
        "seconds=%.6f rate=%.0f\n",
        (unsigned long long)g_calls, leaks_a * LEAK_A_SIZE + leaks_b * LEAK_B_SIZE, leaks_a + leaks_b,
        reachable * REACHABLE_SIZE, reachable, dt, g_calls / (dt > 0 ? dt : 1e-9));
    return 0;
}
