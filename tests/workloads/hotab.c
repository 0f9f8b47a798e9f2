/*
 * hotab MS
 *
 * Busy for MS milliseconds of CPU time, split 3:1 between two functions: each round calls
 * hot_a() for three units of work and hot_b() for one (the same loop, so equal time per
 * unit). Prints nothing. The task name is "hotab".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile unsigned long sink, calls;

__attribute__((noinline)) static void done(void) {
    calls++;
}

/* The one loop both run, so that a unit of work costs the same in either (two copies of it
 * could be aligned differently and run at different speeds). Not a leaf (it calls done()), so
 * it sets up a frame and frame-pointer unwinding sees its caller. */
__attribute__((noinline)) static void work(unsigned long units) {
    for (unsigned long i = 0; i < units * 20000ul; ++i) sink += i;
    done();
}

/* The counter after the call keeps it a call (not a tail jump): hot_a stays in the stack. */
__attribute__((noinline)) void hot_a(void) {
    work(3);
    calls++;
}

__attribute__((noinline)) void hot_b(void) {
    work(1);
    calls++;
}

int main(int argc, char** argv) {
    char* end;
    if (argc != 2) {
        fprintf(stderr, "usage: hotab MS\n");
        return 2;
    }
    errno = 0;
    long ms = strtol(argv[1], &end, 10);
    if (errno || end == argv[1] || *end || ms < 0) {
        fprintf(stderr, "usage: hotab MS\n");
        return 2;
    }
    prctl(PR_SET_NAME, "hotab", 0, 0, 0);
    struct timespec start, now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    do {
        for (int r = 0; r < 16; ++r) {
            hot_a();
            hot_b();
        }
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
    return 0;
}
