// CPU-bound load for bench/profile_bench.py: THREADS threads (default: one per online CPU) spin in
// a small call tree a few levels deep, so that the samples of a profiler carry realistic user
// stacks (thread start -> worker -> phase_a/phase_b -> mix/churn/... -> leaf).
// Frame pointers are kept (the pragma below: the Makefile's bench rule builds with plain -O2 -g;
// leaves get a frame through KEEP_FRAME, as gcc gives leaf functions none even with
// -fno-omit-frame-pointer), the functions are noinline and calls in tail position stay calls, so
// frame-pointer unwinding sees every level.
//
//   spin [-t THREADS] [-d SECONDS]
//
// Runs for -d seconds (default 5), or until SIGINT/SIGTERM. Prints one line:
// "spin threads=T iterations=N seconds=S rate=R" where R is iterations per second, all threads
// together (an iteration is one pass through the call tree, a few microseconds).
#pragma GCC optimize("no-omit-frame-pointer", "no-optimize-sibling-calls")
#define _GNU_SOURCE
#include <errno.h>
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
// Makes a leaf function set up %rbp like the others, so its caller is not skipped by the unwinder.
#define KEEP_FRAME() __asm__ volatile("" ::"r"(__builtin_frame_address(0)))

static atomic_int stop;
static volatile uint64_t sink;  // keeps the results alive

static void on_signal(int sig) {
    (void)sig;
    atomic_store(&stop, 1);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Leaves: plain arithmetic loops of different lengths, so the profile has a few distinct hot spots.
NOINLINE static uint64_t leaf_hash(uint64_t x, int n) {
    KEEP_FRAME();
    for (int i = 0; i < n; i++) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 29;
    }
    return x;
}

NOINLINE static uint64_t leaf_sum(const uint32_t* v, int n) {
    KEEP_FRAME();
    uint64_t s = 0;
    for (int i = 0; i < n; i++) s += (uint64_t)v[i] * (uint64_t)(i | 1);
    __asm__ volatile("" : "+r"(s));  // no vectorized short-cut across calls
    return s;
}

NOINLINE static uint64_t mix(uint64_t x) {
    return leaf_hash(x, 200) + leaf_hash(x + 1, 100);
}

NOINLINE static uint64_t churn(uint32_t* v, int n, uint64_t x) {
    for (int i = 0; i < n; i++) v[i] = (uint32_t)(x + (uint64_t)i * 2654435761u);
    return leaf_sum(v, n);
}

NOINLINE static uint64_t phase_a(uint64_t x) {
    return mix(x) ^ leaf_hash(x, 50);
}

NOINLINE static uint64_t phase_b(uint32_t* v, uint64_t x) {
    return churn(v, 256, x) + mix(x >> 1);
}

NOINLINE static uint64_t step(uint32_t* v, uint64_t x) {
    return (x & 1) ? phase_a(x) : phase_b(v, x);
}

struct worker {
    pthread_t thread;
    uint64_t iterations;
};

NOINLINE static void* worker(void* arg) {
    struct worker* w = arg;
    uint32_t v[256];
    uint64_t x = (uint64_t)(uintptr_t)w, n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        x = step(v, x) + 1;
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
                fprintf(stderr, "usage: spin [-t THREADS] [-d SECONDS]\n");
                return 2;
        }
    }
    if (threads < 1 || threads > 1024 || seconds <= 0) {
        fprintf(stderr, "spin: bad -t or -d\n");
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct worker* ws = calloc((size_t)threads, sizeof *ws);
    if (!ws) {
        perror("spin: calloc");
        return 1;
    }
    double t0 = now_s();
    for (long i = 0; i < threads; i++) {
        int err = pthread_create(&ws[i].thread, NULL, worker, &ws[i]);
        if (err) {
            fprintf(stderr, "spin: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    // The main thread sleeps until the deadline or a signal (nanosleep returns early on EINTR).
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
    printf("spin threads=%ld iterations=%llu seconds=%.3f rate=%.1f\n", threads, (unsigned long long)total,
           elapsed, (double)total / elapsed);
    free(ws);
    return 0;
}
