// Leak workload with threads (kmemleak --user against valgrind's leak check). Each of 3 worker
// threads leaks 2 blocks of 200 bytes (leak_in_thread), holds 1 block of 160 bytes in a local
// variable across a blocking read (reachable from its stack: not leaked) and waits there until
// the process exits. A fourth thread leaks 3 blocks of 88 bytes and ends, joined by main.
// Nothing but write(2) for output.
//   leak_threads [wait]   wait: read a byte from stdin before starting, and again before
//                         exiting (EOF does too)
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

void* volatile sink;
static int hold[2];  // the workers block reading this pipe, which nobody writes
static int started[2];

__attribute__((noinline)) void leak_in_thread(void) {
    for (int i = 0; i < 2; i++) {
        char* p = malloc(200);
        memset(p, 0x11, 200);
        sink = p;
        sink = NULL;
    }
}

// Zeroes the dead stack below the caller's frame. The frames of malloc and leak_in_thread left
// the leaked blocks' addresses there, and a conservative scan reads the 128-byte red zone below a
// stopped thread's stack pointer (a leaf function's live data may be there): a worker stopped
// between its write and its read would have a stale address of a leaked block in it, found
// reachable by chance (CI saw 5 of the 6 leaked, 1 in many runs).
__attribute__((noinline)) static void scrub_stack(void) {
    volatile char pad[4096];
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = 0;
}

__attribute__((noinline)) void* worker(void* arg) {
    (void)arg;
    leak_in_thread();
    char* volatile held = malloc(160);  // on this stack while the thread waits
    memset(held, 0x22, 160);
    scrub_stack();
    if (write(started[1], "w", 1) != 1) abort();
    char c;
    while (read(hold[0], &c, 1) > 0) {
    }
    free(held);
    return NULL;
}

__attribute__((noinline)) void* leak_and_end(void* arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        char* p = malloc(88);
        memset(p, 0x33, 88);
        sink = p;
        sink = NULL;
    }
    return NULL;
}

int main(int argc, char** argv) {
    (void)argv;
    const int wait = argc > 1;
    if (wait) wait_stdin();
    if (pipe(hold) != 0 || pipe(started) != 0) return 1;
    pthread_t t;
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    for (int i = 0; i < 3; i++) {
        char c;
        if (read(started[0], &c, 1) != 1) return 1;
    }
    if (pthread_create(&t, NULL, leak_and_end, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
    static const char done[] = "leak_threads done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    if (wait) wait_stdin();
    exit(0);  // the workers still wait, each holding its block
}
