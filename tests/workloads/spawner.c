/*
 * spawner THREADS SLEEPS MS [go]
 *
 * Starts THREADS threads named "worker-0", "worker-1", ...; each sleeps SLEEPS times MS
 * milliseconds, then they are joined and the process exits 0. The main thread ("spawner")
 * prints "tid NAME TID" for each thread once it runs. With "go" it first prints "ready" and
 * waits for one line on stdin, so a profiler attached with -p before the threads exist must
 * follow them to see them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static long sleeps, ms;

static const char* const kUsage = "spawner THREADS SLEEPS MS [go]";

static void* worker(void* arg) {
    char name[16];
    snprintf(name, sizeof name, "worker-%ld", (long)arg);
    prctl(PR_SET_NAME, name, 0, 0, 0);
    printf("tid %s %ld\n", name, (long)syscall(SYS_gettid));
    fflush(stdout);
    for (long i = 0; i < sleeps; i++) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
        }
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    long n = parse_num(argv[1], kUsage);
    sleeps = parse_num(argv[2], kUsage);
    ms = parse_num(argv[3], kUsage);
    prctl(PR_SET_NAME, "spawner", 0, 0, 0);
    if (argc == 5) {
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) return 1;
    }
    pthread_t* t = calloc((size_t)n, sizeof *t);
    for (long i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, worker, (void*)i) != 0) return 1;
    for (long i = 0; i < n; i++) pthread_join(t[i], NULL);
    free(t);
    return 0;
}
