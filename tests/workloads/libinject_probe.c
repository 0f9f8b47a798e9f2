/*
 * The library tests/unit/injector_test.cpp injects into a running process; each function
 * takes the injector's one string argument.
 *
 *   probe_write("PATH|TEXT")  writes TEXT and a newline into the file PATH; returns TEXT's length
 *   probe_tid("")             the thread id of the thread that runs it
 *   probe_count("")           how many times it has been called in this process (loaded once)
 *   probe_sleep("MS")         sleeps MS milliseconds; returns 7
 *   probe_spin("MS")          runs MS milliseconds without a system call; returns 8
 *   probe_crash("")           writes through a null pointer
 *   probe_vector("")          fills the vector registers with its own values; returns 1
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int probe_write(const char* arg) {
    const char* bar = strchr(arg, '|');
    if (!bar) return -1;
    char path[4096];
    size_t n = (size_t)(bar - arg);
    if (n >= sizeof path) return -1;
    memcpy(path, arg, n);
    path[n] = '\0';
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    const char* text = bar + 1;
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
    close(fd);
    return ok ? (int)len : -1;
}

int probe_tid(const char* arg) {
    (void)arg;
    return gettid();
}

int probe_count(const char* arg) {
    static int calls;
    (void)arg;
    return ++calls;
}

int probe_sleep(const char* arg) {
    long ms = atol(arg);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return 7;
}

int probe_spin(const char* arg) {
    long ms = atol(arg);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
    return 8;
}

int probe_crash(const char* arg) {
    volatile int* volatile p = NULL;
    (void)arg;
    *p = 1;
    return 0;
}

int probe_vector(const char* arg) {
    (void)arg;
    __asm__ volatile(
        "pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\tpcmpeqd %%xmm2, %%xmm2\n\t"
        "pcmpeqd %%xmm3, %%xmm3\n\tpcmpeqd %%xmm8, %%xmm8\n\tpcmpeqd %%xmm15, %%xmm15\n\t"
        "fninit\n\t" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm8", "xmm15");
    return 1;
}
