/*
 * bpwrite K [--wait-stdin]
 *
 * Writes the global int `bp_target` exactly K times, in bp_write() (a 4-byte store each, 200 us apart so
 * that a profiler woken per event keeps up), then prints "done" and exits 0. It first prints
 * "<pid> ready bp_target 0x<address>" (flushed): with --wait-stdin it then waits for a line
 * on stdin, so that a test can set a breakpoint on the variable (its address from nm and
 * /proc/PID/maps) with -p before the writes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define USAGE "bpwrite K [--wait-stdin]"

volatile int bp_target;

/* The store, in a function of its own: a test also breaks on its execution (:x). */
__attribute__((noinline)) void bp_write(int v) {
    bp_target = v;
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char** argv) {
    long k = -1;
    int wait = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wait-stdin"))
            wait = 1;
        else if (k < 0)
            k = parse_num(argv[i], USAGE);
        else
            k = parse_num("x", USAGE);
    }
    if (k < 0) k = parse_num("x", USAGE);
    printf("%d ready bp_target %p\n", (int)getpid(), (void*)&bp_target);
    fflush(stdout);
    if (wait) wait_stdin();
    const struct timespec gap = {0, 200000};
    for (long i = 0; i < k; i++) {
        bp_write((int)i + 1);
        nanosleep(&gap, NULL);
    }
    printf("done\n");
    fflush(stdout);
    return 0;
}
