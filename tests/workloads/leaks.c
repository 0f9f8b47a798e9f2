// Heap profile workload (kmemleak --user): leaks exactly `small` blocks of 48 bytes from
// leak_small_path() and `big` blocks of 4096 bytes from leak_big_path(), and frees every other
// allocation it makes (malloc, calloc, realloc, posix_memalign, aligned_alloc, strdup), in
// `rounds` rounds. It keeps 5 blocks of 64 bytes reachable from a global list (in use, not
// leaked). Nothing but write(2) for output: stdio would keep a buffer allocated.
//   leaks [small big rounds [wait]]   wait: read a byte from stdin before starting, and again
//                                     before exiting (EOF does too)
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void* volatile sink;

__attribute__((noinline)) void* leak_small_alloc(size_t n) {
    char* p = malloc(n);
    memset(p, 0x11, n);
    return p;
}

__attribute__((noinline)) void leak_small_path(int k) {
    for (int i = 0; i < k; i++) {
        sink = leak_small_alloc(48);
        sink = NULL;
    }
}

__attribute__((noinline)) void* leak_big_alloc(size_t n) {
    char* p = calloc(1, n);
    p[0] = 1;
    return p;
}

__attribute__((noinline)) void leak_big_path(int k) {
    for (int i = 0; i < k; i++) {
        sink = leak_big_alloc(4096);
        sink = NULL;
    }
}

// Still reachable at exit, from a global through a list: in use, not leaked.
struct node {
    struct node* next;
    char pad[56];
};
struct node* head;

__attribute__((noinline)) void keep_list(int n) {
    for (int i = 0; i < n; i++) {
        struct node* x = malloc(sizeof *x);
        x->next = head;
        head = x;
    }
}

// Every kind of call, each block freed again: 6 allocations and 6 frees (realloc's included)
// a round.
__attribute__((noinline)) void churn(int rounds) {
    for (int r = 0; r < rounds; r++) {
        char* a = malloc(100 + r % 50);
        char* b = calloc(4, 25);
        a = realloc(a, 1000);
        void* c = NULL;
        if (posix_memalign(&c, 64, 256) != 0) abort();
        void* d = aligned_alloc(128, 512);
        char* e = strdup("perf-prof");
        memset(a, 0, 1000);
        // Used, so that the compiler keeps every call (it drops an unused malloc/free pair).
        sink = b;
        sink = c;
        sink = d;
        sink = e;
        sink = NULL;
        free(e);
        free(d);
        free(c);
        free(b);
        free(a);
    }
}

int main(int argc, char** argv) {
    int small = argc > 1 ? atoi(argv[1]) : 3;
    int big = argc > 2 ? atoi(argv[2]) : 2;
    int rounds = argc > 3 ? atoi(argv[3]) : 1000;
    if (argc > 4) {
        char c;
        if (read(0, &c, 1) < 0) return 1;
    }
    churn(rounds);
    leak_small_path(small);
    leak_big_path(big);
    keep_list(5);
    churn(rounds);
    static const char done[] = "leaks done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    if (argc > 4) {
        char c;
        if (read(0, &c, 1) < 0) return 1;
    }
    return 0;
}
