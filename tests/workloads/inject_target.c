/*
 * inject_target MODE ...: a process to inject into (tests/unit/injector_test.cpp). Each mode
 * prints "ready" once it is about to do what the test injects into, then:
 *
 *   spin N          N rounds of integer and floating-point work held in registers (the vector
 *                   state an injected call clobbers); prints the results; exit code from them.
 *   alloc N         N rounds of malloc, a write into the block, free (most of its time inside
 *                   libc's allocator, holding its arena lock), beside a thread doing N / 2;
 *                   prints checksums; exit code from them.
 *   read            one read(2) of stdin; prints how many bytes and what; exits 3.
 *   signals         counts SIGUSR1 (a handler, SA_RESTART) during one read(2) of stdin; prints
 *                   the bytes read and the count; exits 7.
 *   sleep MS        one clock_nanosleep of MS milliseconds; prints its result and the time it
 *                   took; exits 4.
 *   threads K MS    K threads spinning in user space for MS milliseconds beside a sleeping
 *                   main thread; prints "rounds ok" when each thread made progress; exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char* const kUsage = "inject_target spin N | alloc N | read | signals | sleep MS | threads K MS";

static void ready(void) {
    printf("ready\n");
    fflush(stdout);
}

static long elapsed_ms(const struct timespec* a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

static int spin(long n) {
    ready();
    unsigned long long h = 1469598103934665603ull;
    double s = 0.0, t = 1.0;
    for (long i = 0; i < n; i++) {
        h = (h ^ (unsigned long long)i) * 1099511628211ull;
        s += (double)(h & 1023) * 0.001;
        t = t * 0.999999 + 0.5 * (double)(i & 7);
    }
    printf("h %llx s %.17g t %.17g\n", h, s, t);
    return (int)(h & 63);
}

static void* alloc_loop(void* arg) {
    long n = *(long*)arg;
    unsigned long long sum = 0;
    for (long i = 0; i < n; i++) {
        size_t size = (size_t)(i % 4000) + 1;
        unsigned char* p = malloc(size);
        if (!p) abort();
        p[size - 1] = (unsigned char)i;
        sum += p[size - 1] + size;
        free(p);
    }
    *(long*)arg = (long)sum;
    return NULL;
}

/* Two threads: a process with one thread takes no lock in malloc. */
static int alloc(long n) {
    long mine = n, other = n / 2;
    pthread_t t;
    pthread_create(&t, NULL, alloc_loop, &other);
    ready();
    alloc_loop(&mine);
    pthread_join(t, NULL);
    printf("sum %ld %ld\n", mine, other);
    return (int)(mine & 63);
}

static int read_once(void) {
    ready();
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    printf("got %zd %s\n", n, buf);
    return 3;
}

static volatile sig_atomic_t g_usr1;

static void on_usr1(int sig) {
    (void)sig;
    g_usr1++;
}

static int count_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    ready();
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf - 1);
    printf("got %zd usr1 %d\n", n, (int)g_usr1);
    return 7;
}

static int sleep_once(long ms) {
    ready();
    struct timespec start, ts = {ms / 1000, (ms % 1000) * 1000000L};
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    printf("rc %d elapsed %ld\n", rc, elapsed_ms(&start));
    return 4;
}

static volatile int g_stop;

static void* spinner(void* arg) {
    volatile unsigned long* rounds = arg;
    while (!g_stop) (*rounds)++;
    return NULL;
}

static int threads(long k, long ms) {
    pthread_t t[64];
    unsigned long rounds[64] = {0};
    if (k > 64) k = 64;
    for (long i = 0; i < k; i++) pthread_create(&t[i], NULL, spinner, &rounds[i]);
    ready();
    usleep((useconds_t)ms * 1000);
    g_stop = 1;
    int ok = 1;
    for (long i = 0; i < k; i++) {
        pthread_join(t[i], NULL);
        ok &= rounds[i] > 0;
    }
    printf("rounds %s\n", ok ? "ok" : "missing");
    return ok ? 0 : 1;
}

int main(int argc, char** argv) {
    if (argc == 3 && !strcmp(argv[1], "spin")) return spin(parse_num(argv[2], kUsage));
    if (argc == 3 && !strcmp(argv[1], "alloc")) return alloc(parse_num(argv[2], kUsage));
    if (argc == 2 && !strcmp(argv[1], "read")) return read_once();
    if (argc == 2 && !strcmp(argv[1], "signals")) return count_signals();
    if (argc == 3 && !strcmp(argv[1], "sleep")) return sleep_once(parse_num(argv[2], kUsage));
    if (argc == 4 && !strcmp(argv[1], "threads"))
        return threads(parse_num(argv[2], kUsage), parse_num(argv[3], kUsage));
    fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
}
