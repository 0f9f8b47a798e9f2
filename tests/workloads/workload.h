/* What the workloads share: argument parsing that exits 2 with the usage line on bad input, and
 * the wait of a workload a test attaches to before it starts. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A decimal number >= 0, or the usage line on stderr and exit 2. */
static inline long parse_num(const char* s, const char* usage) {
    char* end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "usage: %s\n", usage);
        exit(2);
    }
    return v;
}

/* Waits for a byte on stdin (EOF too); exits 1 when stdin cannot be read. */
static inline void wait_stdin(void) {
    char c;
    if (read(0, &c, 1) < 0) _exit(1);
}

/* clock_nanosleep(CLOCK_MONOTONIC) made from the caller itself: a libc wrapper, built without
 * frame pointers, would hide the caller from a frame-pointer unwinder (the user stack would
 * start in libc, then the caller's caller). Returns EINTR when interrupted, else 0. */
static inline long raw_nanosleep(struct timespec* ts) {
#if defined(__x86_64__)
    long ret;
    register long rem __asm__("r10") = (long)ts;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)SYS_clock_nanosleep), "D"((long)CLOCK_MONOTONIC), "S"(0L), "d"(ts), "r"(rem)
                     : "rcx", "r11", "memory");
    return ret == -EINTR ? EINTR : 0;
#else
    return clock_nanosleep(CLOCK_MONOTONIC, 0, ts, ts);
#endif
}
