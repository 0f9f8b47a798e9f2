// CPU-bound load for bench/unwind_bench.py, built without frame pointers (-O2 -fomit-frame-pointer,
// the Makefile's rule for this file): THREADS threads (default: one per online CPU) run a small
// call tree whose stacks only call-frame information can unwind, and spend part of their time
// inside libc, some of it in callbacks libc makes into this program:
//
//   thread start -> worker -> step -> stage_sort -> qsort -> (libc) -> compare -> key_of
//                                  -> stage_text -> format_line -> snprintf / strtod / strlen
//                                  -> stage_mix  -> mix_block -> memcpy / memmove, hash loop
//
// Functions are noinline (and calls in tail position stay calls), so every level is a frame.
//
//   nofp [-t THREADS] [-d SECONDS]
//
// Runs for -d seconds (default 5), or until SIGINT/SIGTERM. Prints one line:
// "nofp threads=T iterations=N seconds=S rate=R" (an iteration is one pass through step()).
#pragma GCC optimize("omit-frame-pointer", "no-optimize-sibling-calls")
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static atomic_int stop;
static volatile uint64_t sink;

static void on_signal(int sig) {
    (void)sig;
    atomic_store(&stop, 1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

NOINLINE static uint64_t key_of(const uint64_t* p) {
    uint64_t x = *p;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

NOINLINE static int compare(const void* a, const void* b) {
    const uint64_t ka = key_of(a), kb = key_of(b);
    return ka < kb ? -1 : ka > kb;
}

NOINLINE static uint64_t stage_sort(uint64_t* v, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) v[i] = seed + i * 0x2545f4914f6cdd1dull;
    qsort(v, n, sizeof *v, compare);
    return v[n / 2];
}

NOINLINE static size_t format_line(char* buf, size_t size, uint64_t x) {
    int n = snprintf(buf, size, "%llu %.6f %08llx", (unsigned long long)x, (double)(x % 100000) / 7.0,
                     (unsigned long long)(x >> 17));
    char* end = NULL;
    double d = strtod(strchr(buf, ' ') + 1, &end);
    return (size_t)n + strlen(buf) + (size_t)d;
}

NOINLINE static uint64_t stage_text(uint64_t x) {
    char buf[128];
    uint64_t s = 0;
    for (int i = 0; i < 8; i++) s += format_line(buf, sizeof buf, x + (uint64_t)i);
    return s;
}

NOINLINE static uint64_t mix_block(uint8_t* a, uint8_t* b, size_t n, uint64_t x) {
    memset(a, (int)(x & 0xff), n);
    memcpy(b, a, n);
    memmove(a + 1, b, n - 1);
    uint64_t h = x;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w;
        memcpy(&w, a + i, sizeof w);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

NOINLINE static uint64_t stage_mix(uint64_t x) {
    uint8_t a[1024], b[1024];
    return mix_block(a, b, sizeof a, x);
}

NOINLINE static uint64_t step(uint64_t* v, uint64_t x) {
    switch (x % 3) {
        case 0:
            return stage_sort(v, 256, x);
        case 1:
            return stage_text(x);
        default:
            return stage_mix(x);
    }
}

struct worker {
    pthread_t thread;
    uint64_t iterations;
};

NOINLINE static void* worker(void* arg) {
    struct worker* w = arg;
    uint64_t v[256];
    uint64_t x = (uint64_t)(uintptr_t)w, n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        x = step(v, x) + n;
        n++;
    }
    sink += x;
    w->iterations = n;
    return NULL;
}

int main(int argc, char** argv) {
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    double seconds = 5.0;
    int opt;
    while ((opt = getopt(argc, argv, "t:d:")) != -1) {
        switch (opt) {
            case 't':
                threads = atol(optarg);
                break;
            case 'd':
                seconds = atof(optarg);
                break;
            default:
                fprintf(stderr, "usage: nofp [-t THREADS] [-d SECONDS]\n");
                return 2;
        }
    }
    if (threads < 1 || threads > 1024 || seconds <= 0) {
        fprintf(stderr, "nofp: bad -t or -d\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct worker* ws = calloc((size_t)threads, sizeof *ws);
    if (!ws) {
        perror("nofp: calloc");
        return 1;
    }
    double t0 = now_s();
    for (long i = 0; i < threads; i++) {
        int err = pthread_create(&ws[i].thread, NULL, worker, &ws[i]);
        if (err) {
            fprintf(stderr, "nofp: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    double deadline = t0 + seconds;
    for (double t = now_s(); t < deadline && !atomic_load(&stop); t = now_s()) {
        double left = deadline - t;
        if (left > 0.05) left = 0.05;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
    atomic_store(&stop, 1);
    uint64_t total = 0;
    for (long i = 0; i < threads; i++) {
        pthread_join(ws[i].thread, NULL);
        total += ws[i].iterations;
    }
    double elapsed = now_s() - t0;
    printf("nofp threads=%ld iterations=%llu seconds=%.3f rate=%.1f\n", threads, (unsigned long long)total, elapsed,
           (double)total / elapsed);
    free(ws);
    return 0;
}
