/*
 * hopper N
 *
 * Moves itself between CPU 0 and CPU 1 N times with sched_setaffinity (CPU 1, 0, 1, ...),
 * busy for 1 ms on each, then exits 0: N migrations of its own (sched-migrate's test).
 * Prints nothing. The task name is "hopper".
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static void busy_ms(long ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

int main(int argc, char** argv) {
    if (argc != 2 || atoi(argv[1]) <= 0) {
        fprintf(stderr, "usage: hopper N\n");
        return 2;
    }
    prctl(PR_SET_NAME, "hopper", 0, 0, 0);
    int n = atoi(argv[1]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    busy_ms(1);
    for (int i = 0; i < n; i++) {
        CPU_ZERO(&set);
        CPU_SET(i % 2 ? 0 : 1, &set);
        if (sched_setaffinity(0, sizeof set, &set)) {
            perror("sched_setaffinity");
            return 1;
        }
        busy_ms(1);
    }
    return 0;
}
