// A deterministic syscall load for the trace tests.
//   syscalls getpid N        N getpid() system calls
//   syscalls close N K       close(1000 + i % K) for i < N (all fail with EBADF)
//   syscalls lseek N K       lseek(1000 + i % K, i, SEEK_SET) for i < N (all fail with EBADF)
//   syscalls fork N          fork; parent and child each make N getpid() calls
//   syscalls threads N       two threads pinned to CPU 0 and CPU 1, N getpid() calls each,
//                            started together
//   syscalls mixed N M       N getpid() calls, then M (at least 1) close(1000 + i) calls (all
//                            fail with EBADF)
//   syscalls pipes N         N times: pipe(), then close() of both ends
//   syscalls nanosleep N     N clock_nanosleep() of 1 ms, then prints "last sleep" and sleeps
//                            a minute more (a sleep still in progress when the tracer stops)
// Every call goes through syscall(2), so no libc caching hides one.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long n_calls;
static pthread_barrier_t start;

static void getpids(long n) {
    for (long i = 0; i < n; i++) syscall(SYS_getpid);
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

static void* thread_main(void* arg) {
    long cpu = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) perror("sched_setaffinity");
    // Both threads start together, so their calls interleave in time across the CPUs.
    pthread_barrier_wait(&start);
    getpids(n_calls);
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: syscalls getpid|close|lseek|fork|threads|mixed|pipes|nanosleep N [K]\n");
        return 2;
    }
    const char* mode = argv[1];
    n_calls = atol(argv[2]);
    long k = argc > 3 ? atol(argv[3]) : 1;
    if (k < 1) k = 1;
    if (!strcmp(mode, "getpid")) {
        getpids(n_calls);
    } else if (!strcmp(mode, "close")) {
        for (long i = 0; i < n_calls; i++) syscall(SYS_close, 1000 + i % k);
    } else if (!strcmp(mode, "lseek")) {
        for (long i = 0; i < n_calls; i++) syscall(SYS_lseek, 1000 + i % k, i, SEEK_SET);
    } else if (!strcmp(mode, "fork")) {
        pid_t pid = fork();
        if (pid < 0) return perror("fork"), 1;
        getpids(n_calls);
        if (pid == 0) _exit(0);
        waitpid(pid, NULL, 0);
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[2];
        pthread_barrier_init(&start, NULL, 2);
        for (long c = 0; c < 2; c++) pthread_create(&t[c], NULL, thread_main, (void*)c);
        for (int c = 0; c < 2; c++) pthread_join(t[c], NULL);
    } else if (!strcmp(mode, "mixed")) {
        getpids(n_calls);
        for (long i = 0; i < k; i++) syscall(SYS_close, 1000 + i);
    } else if (!strcmp(mode, "pipes")) {
        for (long i = 0; i < n_calls; i++) {
            int fd[2];
            if (syscall(SYS_pipe2, fd, 0) != 0) return perror("pipe2"), 1;
            syscall(SYS_close, fd[0]);
            syscall(SYS_close, fd[1]);
        }
    } else if (!strcmp(mode, "nanosleep")) {
        for (long i = 0; i < n_calls; i++) nap_ms(1);
        printf("last sleep\n");
        fflush(stdout);
        nap_ms(60000);
    } else {
        fprintf(stderr, "syscalls: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
