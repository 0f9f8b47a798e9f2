/*
 * ppid_burst CALLS PAGES [go]
 *
 * With "go", prints "ready" and waits for a byte on stdin. Then makes exactly CALLS getppid()
 * system calls back to back, touches PAGES fresh anonymous pages (one minor fault each), prints
 * "done" and exits 0 (with "go", after a second byte or EOF on stdin). Pin it with taskset to count on one CPU.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

static const char* const kUsage = "ppid_burst CALLS PAGES [go]";

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "go"))) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    long calls = parse_num(argv[1], kUsage), pages = parse_num(argv[2], kUsage);
    if (argc == 4) {
        printf("ready\n");
        fflush(stdout);
        wait_stdin();
    }
    for (long i = 0; i < calls; i++) syscall(SYS_getppid);
    if (pages) {
        char* p = mmap(NULL, (size_t)pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        for (long i = 0; i < pages; i++) p[i * 4096] = 1;
    }
    printf("done\n");
    fflush(stdout);
    if (argc == 4) wait_stdin(); /* stays until told (or EOF): perf-prof may watch it */
    return 0;
}
