/* What the workloads share: argument parsing that exits 2 with the usage line on bad input, and
 * the wait of a workload a test attaches to before it starts. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
