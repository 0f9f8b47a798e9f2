/*
 * faulter N [--wait-stdin] [--again]
 *
 * Maps N fresh anonymous pages (transparent huge pages off, so each page faults alone),
 * prints "buf 0x<address> pages N" (flushed), writes one byte into each page once (exactly N
 * page faults at addresses inside the buffer, all in user mode), prints "done" and exits 0.
 *
 * --wait-stdin: first print "<pid> ready" (flushed) and wait for a line on stdin, so that a
 *               test can attach a profiler with -p before the pages are touched.
 * --again:      then wait for another line and do it all once more with N other fresh pages
 *               (2N faults in all): the second round follows whatever the first one caused.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#define USAGE "faulter N [--wait-stdin] [--again]"

/* Maps n fresh pages, says where, writes a byte into each, says "done". */
static int round_of(long n) {
    const long page = sysconf(_SC_PAGESIZE);
    char* buf = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(buf, (size_t)(n * page), MADV_NOHUGEPAGE);
    printf("buf %p pages %ld\n", (void*)buf, n);
    fflush(stdout);
    for (long i = 0; i < n; i++) ((volatile char*)buf)[i * page] = 1;
    printf("done\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char** argv) {
    long n = -1;
    int wait = 0, again = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wait-stdin"))
            wait = 1;
        else if (!strcmp(argv[i], "--again"))
            again = 1;
        else if (n < 0)
            n = parse_num(argv[i], USAGE);
        else
            n = parse_num("x", USAGE);
    }
    if (n <= 0) n = parse_num("x", USAGE);
    if (wait) {
        printf("%d ready\n", (int)getpid());
        fflush(stdout);
        wait_stdin();
    }
    if (round_of(n)) return 1;
    if (again) {
        wait_stdin();
        if (round_of(n)) return 1;
    }
    return 0;
}
