/*
 * heap_live [wait]
 *
 * Holds known live allocations for the heap profiles of `serve`: 20,000 blocks of 1,024 bytes
 * from alloc_small() (20,480,000 bytes) and 6,000 blocks of 4,096 bytes from alloc_large()
 * (24,576,000 bytes); churn() allocates and frees 10,000 blocks of 512 bytes (none live). With
 * "wait" it allocates only after SIGUSR1, so that a profiler attached after the start sees
 * the allocations. Prints "allocated" when done, then sleeps until killed. Task name
 * "heap_live".
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL_N 20000
#define SMALL_SIZE 1024
#define LARGE_N 6000
#define LARGE_SIZE 4096

static void* small[SMALL_N];
static void* large[LARGE_N];
static volatile sig_atomic_t go;

static void on_usr1(int sig) {
    (void)sig;
    go = 1;
}

__attribute__((noinline)) void alloc_small(void) {
    for (int i = 0; i < SMALL_N; i++) {
        small[i] = malloc(SMALL_SIZE);
        memset(small[i], 1, 16);
    }
}

__attribute__((noinline)) void alloc_large(void) {
    for (int i = 0; i < LARGE_N; i++) {
        large[i] = malloc(LARGE_SIZE);
        memset(large[i], 2, 16);
    }
}

__attribute__((noinline)) void churn(void) {
    for (int i = 0; i < 10000; i++) {
        char* volatile p = malloc(512);
        p[0] = 1;
        free(p);
    }
}

int main(int argc, char** argv) {
    int wait = argc > 1 && strcmp(argv[1], "wait") == 0;
    if (wait) {
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        signal(SIGUSR1, on_usr1);
        sigprocmask(SIG_BLOCK, &block, &old);
        printf("waiting\n");
        fflush(stdout);
        while (!go) sigsuspend(&old);
    }
    alloc_small();
    churn();
    alloc_large();
    printf("allocated\n");
    fflush(stdout);
    for (;;) pause();
}
