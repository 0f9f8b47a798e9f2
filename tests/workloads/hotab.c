/*
 * hotab MS
 *
 * Busy for MS milliseconds of CPU time, split 3:1 between two functions: each round calls
 * hot_a() for 3k units of work and hot_b() for k (the same loop, so equal time per unit).
 * k varies from round to round (1..8, a fixed pseudo-random sequence): with rounds of one
 * length the loop would be periodic, and a sampling timer whose period is close to a whole
 * number of rounds sees the same few phases of it over and over (aliasing), which skewed the
 * sampled ratio anywhere from 2.8 to 4 between runs. Prints nothing. The task name is "hotab".
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
__attribute__((noinline)) void hot_a(unsigned long k) {
    work(3 * k);
    calls++;
}

__attribute__((noinline)) void hot_b(unsigned long k) {
    work(k);
    calls++;
}

static unsigned long next_k(void) {
    static unsigned long x = 88172645463325252ul;  // xorshift64
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return 1 + x % 8;
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
        for (int r = 0; r < 4; ++r) {
            const unsigned long k = next_k();
            hot_a(k);
            hot_b(k);
        }
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
    return 0;
}
