/* What the workloads share: argument parsing that exits 2 with the usage line on bad input. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
