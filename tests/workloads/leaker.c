// Leaks from two known functions, for the gperftools heap checker test of `--symbols`
// (SPEC §6): run with LD_PRELOAD=libtcmalloc.so.4 HEAPCHECK=draconian PPROF_PATH=...
// The leaked blocks are only reachable through pointers that are overwritten, so the checker
// reports them with the stacks leaker_alloc_small <- leak_twice <- main and
// leaker_alloc_big <- main.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile void* sink;

__attribute__((noinline)) void* leaker_alloc_small(size_t n) {
    char* p = malloc(n);
    memset(p, 1, n);
    return p;
}

__attribute__((noinline)) void* leaker_alloc_big(size_t n) {
    char* p = malloc(n);
    memset(p, 2, n);
    return p;
}

__attribute__((noinline)) void leak_twice(void) {
    for (int i = 0; i < 2; i++) {
        sink = leaker_alloc_small(48);
        sink = NULL;
    }
}

int main(void) {
    leak_twice();
    sink = leaker_alloc_big(4096);
    sink = NULL;
    void* kept = malloc(16);  // freed: not a leak
    free(kept);
    puts("leaker done");
    return 0;
}
