// The harness of the CPU-bound loads of the profiling benches (bench/spin.c, bench/nofp.c): THREADS
// threads (default: one per online CPU) each call the load's step function in a loop, each pass
// one iteration, for -d SECONDS (default 5) or until SIGINT/SIGTERM. Prints one line:
// "NAME threads=T iterations=N seconds=S rate=R" where R is iterations per second, all threads
// together. Included after the load's own #pragma GCC optimize, which the harness's functions
// (worker: a frame of every stack) follow too.
//
//   NAME [-t THREADS] [-d SECONDS]
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

// One iteration: `scratch` is 256 words of the thread's stack, `x` the last result.
typedef uint64_t (*load_step_fn)(void* scratch, uint64_t x);

static load_step_fn load_step;
static atomic_int load_stop;
static volatile uint64_t load_sink;  // keeps the results alive

static void load_on_signal(int sig) {
    (void)sig;
    atomic_store(&load_stop, 1);
}

static double load_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct load_worker {
    pthread_t thread;
    uint64_t iterations;
};

NOINLINE static void* worker(void* arg) {
    struct load_worker* w = arg;
    uint64_t scratch[256];
    uint64_t x = (uint64_t)(uintptr_t)w, n = 0;
    while (!atomic_load_explicit(&load_stop, memory_order_relaxed)) {
        x = load_step(scratch, x) + 1;
        n++;
    }
    load_sink += x;
    w->iterations = n;
    return NULL;
}

static int load_main(int argc, char** argv, const char* name, load_step_fn step) {
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    double seconds = 5.0;
    int opt;
    load_step = step;
    while ((opt = getopt(argc, argv, "t:d:")) != -1) {
        switch (opt) {
            case 't':
                threads = atol(optarg);
                break;
            case 'd':
                seconds = atof(optarg);
                break;
            default:
                fprintf(stderr, "usage: %s [-t THREADS] [-d SECONDS]\n", name);
                return 2;
        }
    }
    if (threads < 1 || threads > 1024 || seconds <= 0) {
        fprintf(stderr, "%s: bad -t or -d\n", name);
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = load_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    struct load_worker* ws = calloc((size_t)threads, sizeof *ws);
    if (!ws) {
        fprintf(stderr, "%s: out of memory\n", name);
        return 1;
    }
    double t0 = load_now_s();
    for (long i = 0; i < threads; i++) {
        int err = pthread_create(&ws[i].thread, NULL, worker, &ws[i]);
        if (err) {
            fprintf(stderr, "%s: pthread_create: %s\n", name, strerror(err));
            return 1;
        }
    }
    // The main thread sleeps until the deadline or a signal (nanosleep returns early on EINTR).
    double deadline = t0 + seconds;
    for (double t = load_now_s(); t < deadline && !atomic_load(&load_stop); t = load_now_s()) {
        double left = deadline - t;
        if (left > 0.05) left = 0.05;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
    atomic_store(&load_stop, 1);
    uint64_t total = 0;
    for (long i = 0; i < threads; i++) {
        pthread_join(ws[i].thread, NULL);
        total += ws[i].iterations;
    }
    double elapsed = load_now_s() - t0;
    printf("%s threads=%ld iterations=%llu seconds=%.3f rate=%.1f\n", name, threads,
           (unsigned long long)total, elapsed, (double)total / elapsed);
    free(ws);
    return 0;
}
