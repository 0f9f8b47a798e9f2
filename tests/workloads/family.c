/*
 * family THREADS FORKS MS NAPS [go]
 *
 * A whole program whose work runs in tasks it creates after exec: THREADS threads and FORKS
 * forked child processes, each of which burns MS milliseconds of CPU in family_spin(), raises
 * SIGUSR1 (ignored) NAPS times and sleeps NAPS times 2 ms (one clock_nanosleep each), then
 * ends. The main thread only creates, joins and waits: it makes no clock_nanosleep call and
 * raises no signal, so whatever a profiler sees of that work it saw in the created tasks.
 * Threads are named "fam-thread", children "fam-child". With "go" it first prints "ready"
 * and waits for one line on stdin, so a profiler attached with -p before any of them exists
 * must follow them. Exits 0 once every task has ended.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char* const kUsage = "family THREADS FORKS MS NAPS [go]";
static long ms, naps;

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Burns `ms` milliseconds of this thread's CPU time. */
__attribute__((noinline)) void family_spin(long ms) {
    const double end = cpu_ms() + (double)ms;
    volatile unsigned long x = 0;
    while (cpu_ms() < end)
        for (int i = 0; i < 10000; i++) x += (unsigned long)i;
}

static void work(void) {
    family_spin(ms);
    for (long i = 0; i < naps; i++) {
        raise(SIGUSR1);
        struct timespec ts = {0, 2000000L};
        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
        }
    }
}

static void* thread_main(void* arg) {
    (void)arg;
    prctl(PR_SET_NAME, "fam-thread", 0, 0, 0);
    work();
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    const long threads = parse_num(argv[1], kUsage), forks = parse_num(argv[2], kUsage);
    ms = parse_num(argv[3], kUsage);
    naps = parse_num(argv[4], kUsage);
    signal(SIGUSR1, SIG_IGN);
    if (argc == 6) {
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) return 1;
    }
    pid_t* kids = calloc((size_t)forks + 1, sizeof *kids);
    for (long i = 0; i < forks; i++) {
        kids[i] = fork();
        if (kids[i] < 0) return 1;
        if (kids[i] == 0) {
            prctl(PR_SET_NAME, "fam-child", 0, 0, 0);
            work();
            _exit(0);
        }
    }
    pthread_t* t = calloc((size_t)threads + 1, sizeof *t);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0) return 1;
    for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    int status, rc = 0;
    for (long i = 0; i < forks; i++)
        if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status) || WEXITSTATUS(status)) rc = 1;
    free(t);
    free(kids);
    return rc;
}
