/*
 * spin MS
 *
 * Busy-loops on the CPU for MS milliseconds (CLOCK_MONOTONIC), then exits 0.
 * Prints nothing.  The task name is "spin".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

int main(int argc, char** argv) {
    char* end;
    if (argc != 2) {
        fprintf(stderr, "usage: spin MS\n");
        return 2;
    }
    errno = 0;
    long ms = strtol(argv[1], &end, 10);
    if (errno || end == argv[1] || *end || ms < 0) {
        fprintf(stderr, "usage: spin MS\n");
        return 2;
    }
    prctl(PR_SET_NAME, "spin", 0, 0, 0);

    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    volatile unsigned long sink = 0;
    do {
        for (int i = 0; i < 10000; i++) sink += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L < ms);
    return 0;
}
