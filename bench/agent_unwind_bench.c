/* The heap agent's walker (lib/heap/agent/unwind.c, compiled in) beside libgcc's
 * _Unwind_Backtrace and glibc's backtrace(3), on stacks 10 and 30 frames deep through a library
 * without frame pointers (build/workloads/libcfi_callback.so's cb_chain, dlopen'd), walked from a
 * callback at the bottom: the walker with its rules cached (a stack seen before, the agent's
 * steady state), with its rule cache emptied before each walk (every FDE parsed again), and after
 * pph_unwind_invalidate() (the objects read again too). Prints the median ns per walk and per
 * frame.
 *
 *   build/bench/agent_unwind_bench [LIBRARY]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "heap/agent/unwind.c"
#include "heap/agent/unwind_cfi.c"

enum { MAX = 128 };
typedef int (*cb_fn)(void*);
typedef int (*chain_fn)(int, cb_fn, void*);

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) int walk_ours(uint64_t* out) {
    const int n = pph_unwind(PPH_CALLER_FRAME(), out, MAX);
    __asm__ volatile("" ::: "memory");
    return n;
}

struct collect {
    int n;
    uint64_t* out;
};
static _Unwind_Reason_Code collect_one(struct _Unwind_Context* ctx, void* arg) {
    struct collect* c = arg;
    if (c->n == MAX) return _URC_END_OF_STACK;
    c->out[c->n++] = _Unwind_GetIP(ctx);
    return _URC_NO_REASON;
}
static __attribute__((noinline)) int walk_libgcc(uint64_t* out) {
    struct collect c = {0, out};
    _Unwind_Backtrace(collect_one, &c);
    return c.n;
}
static __attribute__((noinline)) int walk_glibc(uint64_t* out) {
    void* buf[MAX];
    const int n = backtrace(buf, MAX);
    memcpy(out, buf, sizeof(void*) * (size_t)n);
    return n;
}

struct result {
    const char* what;
    double ns_per_walk;
    int frames;
};

enum { CACHED, UNCACHED, INVALIDATED, LIBGCC, GLIBC, KINDS };
static const char* const names[KINDS] = {"pph_unwind, rules cached", "pph_unwind, rule cache emptied",
                                         "pph_unwind, after invalidate", "_Unwind_Backtrace",
                                         "backtrace(3)"};
static struct result results[KINDS];

static int cmp_double(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

/* At the bottom of the chain: each way of walking, timed. Each sample is one walk (a batch of
 * BATCH walks for the cached rules: a clock read costs as much as such a walk); the median of
 * the samples is kept, so that a preemption on a busy machine does not count. */
enum { SAMPLES = 3000, BATCH = 100 };
static double samples[SAMPLES];
static int measure(void* arg) {
    (void)arg;
    uint64_t out[MAX];
    for (int k = 0; k < KINDS; k++) {
        int n = 0;
        const int batch = k == CACHED ? BATCH : 1;
        for (int warm = 0; warm < 2; warm++) {
            for (int i = 0; i < SAMPLES; i++) {
                if (k == UNCACHED) cache_clear();
                if (k == INVALIDATED) pph_unwind_invalidate();
                const double t0 = now_ns();
                for (int b = 0; b < batch; b++)
                    n = k < LIBGCC ? walk_ours(out) : k == LIBGCC ? walk_libgcc(out) : walk_glibc(out);
                samples[i] = (now_ns() - t0) / batch;
            }
        }
        qsort(samples, SAMPLES, sizeof samples[0], cmp_double);
        results[k] = (struct result){names[k], samples[SAMPLES / 2], n};
    }
    return 0;
}

/* Cached walks from several threads at once: nothing shared is written, so each thread's walks
 * should cost what one thread's do. */
enum { THREAD_WALKS = 1000000 };
static chain_fn chain;
static int walk_many(void* arg) {
    uint64_t out[MAX];
    walk_ours(out); /* the rules of this thread's stack, cached */
    const double t0 = now_ns();
    for (int i = 0; i < THREAD_WALKS; i++) walk_ours(out);
    *(double*)arg = (now_ns() - t0) / THREAD_WALKS;
    return 0;
}
static void* thread_main(void* arg) {
    chain(10, walk_many, arg);
    return NULL;
}

int main(int argc, char** argv) {
    char lib[PATH_MAX];
    if (argc > 1) {
        snprintf(lib, sizeof lib, "%s", argv[1]);
    } else {
        char self[PATH_MAX];
        const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len <= 0) return fprintf(stderr, "agent_unwind_bench: cannot read /proc/self/exe\n"), 1;
        self[len] = 0;
        snprintf(lib, sizeof lib, "%s/../workloads/libcfi_callback.so", dirname(self));
    }
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return fprintf(stderr, "agent_unwind_bench: %s\n", dlerror()), 1;
    chain = (chain_fn)(uintptr_t)dlsym(h, "cb_chain");
    if (!chain) return fprintf(stderr, "agent_unwind_bench: no cb_chain in %s\n", lib), 1;
    printf("%-32s %6s %10s %10s\n", "walker", "frames", "ns/walk", "ns/frame");
    for (int depth = 10; depth <= 30; depth += 20) {
        chain(depth, measure, NULL);
        printf("-- %d frames deep in %s\n", depth, basename(lib));
        for (int k = 0; k < KINDS; k++)
            printf("%-32s %6d %10.1f %10.2f\n", results[k].what, results[k].frames, results[k].ns_per_walk,
                   results[k].ns_per_walk / results[k].frames);
    }
    printf("-- cached walks 10 frames deep, from threads at once (%ld CPUs)\n", sysconf(_SC_NPROCESSORS_ONLN));
    for (int threads = 1; threads <= 8; threads *= 2) {
        pthread_t tid[8];
        double ns[8];
        for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, thread_main, &ns[t]);
        double worst = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(tid[t], NULL);
            if (ns[t] > worst) worst = ns[t];
        }
        printf("%d thread%s: %.1f ns/walk in the slowest\n", threads, threads > 1 ? "s" : "", worst);
    }
    struct pph_unwind_stats st;
    pph_unwind_stats(&st);
    printf("walker: %lu walks, %lu frames, %lu rule hits, %lu misses, %lu object refreshes\n",
           (unsigned long)st.walks, (unsigned long)st.frames, (unsigned long)st.hits, (unsigned long)st.misses,
           (unsigned long)st.refreshes);
    return 0;
}
