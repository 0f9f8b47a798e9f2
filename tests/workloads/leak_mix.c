// Leak workload with every allocator entry and every kind of loss (kmemleak --user against
// valgrind's leak check). It leaks, each from its own function, and then clears every pointer:
//   leak_malloc      7 blocks of 300 bytes (malloc)
//   leak_calloc      3 blocks of 1000 bytes (calloc)
//   leak_realloc     2 blocks grown by realloc from 24 to 40 and then to 2024 bytes
//   leak_memalign    2 blocks of 200 bytes aligned on 64 (posix_memalign)
//   leak_aligned     2 blocks of 512 bytes aligned on 256 (aligned_alloc)
//   leak_strdup      3 strings of 41 bytes (strdup)
//   leak_last        1 block of 1000 bytes (calloc), the last thing main does
//   leak_struct      2 structs of 32 bytes (definitely lost), each pointing to a block of
//                    120 bytes (indirectly lost), which points to one of 56 bytes (indirectly
//                    lost too)
// and keeps reachable: a list of 4 blocks of 72 bytes from a global, a block of 1000 bytes
// held through a pointer to its middle only (valgrind: "possibly lost", not lost), and a
// block of 264 bytes from a static variable of a function. The addresses of the leaked blocks
// also stood in a block of its own, freed before exit (freed memory points nowhere), which
// with `wait` is allocated before the wait: a process attached to (-p) frees it after the
// attach. Nothing but write(2) for output: stdio would keep a buffer allocated.
//   leak_mix [wait]   wait: read a byte from stdin before starting, and again before exiting
//                     (EOF does too)
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

void* volatile sink;

// Where the leaked blocks' addresses were written: freed before exit.
static void** seen;
static int nseen;

static void remember(void* p) {
    seen[nseen++] = p;
}

__attribute__((noinline)) void leak_malloc(void) {
    for (int i = 0; i < 7; i++) {
        char* p = malloc(300);
        memset(p, 0x11, 300);
        remember(p);
    }
}

__attribute__((noinline)) void leak_calloc(void) {
    for (int i = 0; i < 3; i++) {
        char* p = calloc(1, 1000);
        p[0] = 1;
        remember(p);
    }
}

__attribute__((noinline)) void leak_realloc(void) {
    for (int i = 0; i < 2; i++) {
        char* p = malloc(24);
        p = realloc(p, 40);
        p[0] = 1;
        p = realloc(p, 2024);  // moves: the block is freed and a bigger one returned
        p[2000] = 1;
        remember(p);
    }
}

__attribute__((noinline)) void leak_memalign(void) {
    for (int i = 0; i < 2; i++) {
        void* p = NULL;
        if (posix_memalign(&p, 64, 200) != 0) abort();
        memset(p, 0x22, 200);
        remember(p);
    }
}

__attribute__((noinline)) void leak_aligned(void) {
    for (int i = 0; i < 2; i++) {
        char* p = aligned_alloc(256, 512);
        memset(p, 0x33, 512);
        remember(p);
    }
}

__attribute__((noinline)) void leak_strdup(void) {
    static const char text[] = "a string of forty bytes, strdup'd thrice";  // 40 + NUL
    for (int i = 0; i < 3; i++) remember(strdup(text));
}

struct owner {
    char tag[24];
    struct child* child;
};
struct child {
    char pad[112];
    char* grandchild;
};

__attribute__((noinline)) struct child* make_child(void) {
    struct child* c = malloc(sizeof *c);
    memset(c, 0x44, sizeof *c);
    c->grandchild = malloc(56);
    memset(c->grandchild, 0x55, 56);
    return c;
}

__attribute__((noinline)) void leak_struct(void) {
    for (int i = 0; i < 2; i++) {
        struct owner* o = malloc(sizeof *o);
        memset(o, 0x66, sizeof o->tag);
        o->child = make_child();
        remember(o);
    }
}

// The last leak, made just before main returns: its address stays in this dead frame, just
// below where exit() is called from, as a stale copy that no root holds.
__attribute__((noinline)) void leak_last(void) {
    char* volatile p = calloc(1, 1000);
    p[0] = 1;
}

// Still reachable at exit: not leaked.
struct node {
    struct node* next;
    char pad[64];
};
struct node* head;
char* middle;  // points into the middle of its block only

__attribute__((noinline)) void keep_reachable(void) {
    for (int i = 0; i < 4; i++) {
        struct node* n = malloc(sizeof *n);
        n->next = head;
        head = n;
    }
    middle = (char*)malloc(1000) + 500;
    static char* kept;
    kept = malloc(264);
    sink = &kept;
}

// Frees made between the leaks, so that freed and reused memory lies among them.
__attribute__((noinline)) void churn(int rounds) {
    for (int r = 0; r < rounds; r++) {
        char* a = malloc(100 + r % 50);
        char* b = calloc(4, 250);
        a = realloc(a, 1000);
        sink = b;
        sink = NULL;
        free(b);
        free(a);
    }
}

int main(int argc, char** argv) {
    (void)argv;
    const int wait = argc > 1;
    seen = malloc(64 * sizeof *seen);
    if (wait) wait_stdin();
    churn(50);
    leak_malloc();
    churn(10);
    leak_calloc();
    leak_realloc();
    churn(10);
    leak_memalign();
    leak_aligned();
    leak_strdup();
    leak_struct();
    keep_reachable();
    churn(10);
    free(seen);
    seen = NULL;
    static const char done[] = "leak_mix done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    if (wait) wait_stdin();
    leak_last();
    return 0;
}
