/*
 * faulter N [--wait-stdin]
 *
 * Maps N fresh anonymous pages (transparent huge pages off, so each page faults alone),
 * prints "buf 0x<address> pages N" (flushed), writes one byte into each page once (exactly N
 * page faults at addresses inside the buffer, all in user mode), prints "done" and exits 0.
 *
 * --wait-stdin: first print "<pid> ready" (flushed) and wait for a line on stdin, so that a
 *               test can attach a profiler with -p before the pages are touched.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#define USAGE "faulter N [--wait-stdin]"

int main(int argc, char** argv) {
    long n = -1;
    int wait = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wait-stdin"))
            wait = 1;
        else if (n < 0)
            n = parse_num(argv[i], USAGE);
        else
            n = parse_num("x", USAGE);
    }
    if (n <= 0) n = parse_num("x", USAGE);
    const long page = sysconf(_SC_PAGESIZE);
    char* buf = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(buf, (size_t)(n * page), MADV_NOHUGEPAGE);
    if (wait) {
        printf("%d ready\n", (int)getpid());
        fflush(stdout);
        wait_stdin();
    }
    printf("buf %p pages %ld\n", (void*)buf, n);
    fflush(stdout);
    for (long i = 0; i < n; i++) ((volatile char*)buf)[i * page] = 1;
    printf("done\n");
    fflush(stdout);
    return 0;
}
