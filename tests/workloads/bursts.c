/*
 * bursts ROUNDS CALLS MS [go]
 *
 * ROUNDS times: sleeps 10 ms (one clock_nanosleep), then makes CALLS getpid() system calls back
 * to back and busy-waits (no system call) until MS milliseconds have passed since the sleep
 * ended; then sleeps 10 ms a last time and exits 0. So each sys_exit_clock_nanosleep ->
 * sys_enter_clock_nanosleep interval lasts at least MS ms and holds exactly CALLS getpid
 * calls, closely spaced, at its start. With "go" it first prints "ready" and waits for one
 * line on stdin. The task name is "bursts".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char* const kUsage = "bursts ROUNDS CALLS MS [go]";

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  // the vDSO: no system call
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nap10(void) {
    struct timespec ts = {0, 10 * 1000000L};
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    long rounds = parse_num(argv[1], kUsage), calls = parse_num(argv[2], kUsage),
         ms = parse_num(argv[3], kUsage);
    prctl(PR_SET_NAME, "bursts", 0, 0, 0);
    if (argc == 5) {
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) return 1;
    }
    for (long r = 0; r < rounds; r++) {
        nap10();
        const long long start = now_ns();
        for (long i = 0; i < calls; i++) syscall(SYS_getpid);
        while (now_ns() - start < ms * 1000000LL) {
        }
    }
    nap10();
    return 0;
}
