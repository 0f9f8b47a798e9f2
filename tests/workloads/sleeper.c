/*
 * sleeper N SLEEP_MS PAUSE_MS [go]
 *
 * Sleeps PAUSE_MS milliseconds once, then N times SLEEP_MS (clock_nanosleep: S state each
 * time), then exits 0 without any other blocking call. With "go" it first prints "ready" and
 * waits for one line on stdin, so that a profiler attached with -p sees every sleep from the
 * pause on. The task name is "sleeper"; the sleeps happen in nap() called from sleep_loop(),
 * frame pointers kept, so stacks name them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char* const kUsage = "sleeper N SLEEP_MS PAUSE_MS [go]";

__attribute__((noinline)) void nap(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (raw_nanosleep(&ts) == EINTR) {
    }
    __asm__ volatile("" ::: "memory");  // not a tail call: nap stays on the stack
}

__attribute__((noinline)) void sleep_loop(long n, long ms) {
    for (long i = 0; i < n; i++) nap(ms);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    long n = parse_num(argv[1], kUsage), ms = parse_num(argv[2], kUsage), pause = parse_num(argv[3], kUsage);
    prctl(PR_SET_NAME, "sleeper", 0, 0, 0);
    if (argc == 5) {
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) return 1;
    }
    nap(pause);
    sleep_loop(n, ms);
    return 0;
}
