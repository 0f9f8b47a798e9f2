// Makes the kernel allocate and free known objects, for the kmemleak tests.
//   kalloc files N         N times open("/dev/null") then close(): one struct file (filp cache)
//                          allocated and freed each time
//   kalloc pipes N         N times pipe() then close() of both ends (kmalloc'd pipe_inode_info
//                          and buffer array, freed by the last close)
//   kalloc hold N MS M H   creates N eventfds (the old ones: one kmalloc'd eventfd_ctx each,
//                          call site do_eventfd), sleeps MS ms, creates M more (the young
//                          ones), prints "held", keeps them all H ms more, closes them, exits
//   kalloc perf N          N times a dummy perf event on CPU 0 (perf_event_open), its ring buffer
//                          mapped, then unmapped and closed: the event (perf_event_alloc) and the
//                          buffer (rb_alloc) are allocated on CPU 0's node, i.e. with node != -1
// Every call goes through syscall(2), so no libc caching hides one.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char usage[] = "kalloc files N | kalloc pipes N | kalloc hold N MS M H | kalloc perf N";

static int open_null(void) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror("kalloc: open /dev/null");
        exit(1);
    }
    return fd;
}

static void eventfds(int* fds, long n) {
    for (long i = 0; i < n; i++) {
        fds[i] = (int)syscall(SYS_eventfd2, 0, EFD_CLOEXEC);
        if (fds[i] < 0) {
            perror("kalloc: eventfd");
            exit(1);
        }
    }
}

static int perf_on_cpu0(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, 0, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        perror("kalloc: perf_event_open");
        exit(1);
    }
    const size_t len = 2 * (size_t)sysconf(_SC_PAGESIZE);
    void* rb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (rb == MAP_FAILED) {
        perror("kalloc: mmap of the perf ring buffer");
        exit(1);
    }
    munmap(rb, len);
    return fd;
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    const long n = parse_num(argv[2], usage);
    if (!strcmp(argv[1], "files") && argc == 3) {
        for (long i = 0; i < n; i++) syscall(SYS_close, open_null());
        return 0;
    }
    if (!strcmp(argv[1], "pipes") && argc == 3) {
        for (long i = 0; i < n; i++) {
            int p[2];
            if (syscall(SYS_pipe2, p, O_CLOEXEC) != 0) {
                perror("kalloc: pipe2");
                return 1;
            }
            syscall(SYS_close, p[0]);
            syscall(SYS_close, p[1]);
        }
        return 0;
    }
    if (!strcmp(argv[1], "perf") && argc == 3) {
        for (long i = 0; i < n; i++) syscall(SYS_close, perf_on_cpu0());
        return 0;
    }
    if (!strcmp(argv[1], "hold") && argc == 6) {
        const long ms = parse_num(argv[3], usage), m = parse_num(argv[4], usage);
        const long hold = parse_num(argv[5], usage);
        int* fds = calloc((size_t)(n + m) + 1, sizeof(int));
        if (!fds) return 1;
        eventfds(fds, n);
        nap_ms(ms);
        eventfds(fds + n, m);
        printf("held\n");
        fflush(stdout);
        nap_ms(hold);
        for (long i = 0; i < n + m; i++) syscall(SYS_close, fds[i]);
        free(fds);
        return 0;
    }
    fprintf(stderr, "usage: %s\n", usage);
    return 2;
}
