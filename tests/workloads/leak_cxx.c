// Leak workload through C++'s operator new and new[] (libstdc++'s, called by their mangled
// names from C: kmemleak --user against valgrind's leak check). Leaks 4 objects of 24 bytes
// (new, leak_new) and 2 arrays of 400 bytes (new[], leak_new_array), and deletes 100 of each
// again (churn_new). Nothing but write(2) for output.
//   leak_cxx [wait]   wait: read a byte from stdin before starting, and again before exiting
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

void* _Znwm(size_t n);    // operator new(size_t)
void* _Znam(size_t n);    // operator new[](size_t)
void _ZdlPv(void* p);     // operator delete(void*)
void _ZdaPv(void* p);     // operator delete[](void*)

void* volatile sink;

__attribute__((noinline)) void leak_new(void) {
    for (int i = 0; i < 4; i++) {
        char* p = _Znwm(24);
        memset(p, 0x11, 24);
        sink = p;
        sink = NULL;
    }
}

__attribute__((noinline)) void leak_new_array(void) {
    for (int i = 0; i < 2; i++) {
        char* p = _Znam(400);
        memset(p, 0x22, 400);
        sink = p;
        sink = NULL;
    }
}

__attribute__((noinline)) void churn_new(void) {
    for (int i = 0; i < 100; i++) {
        char* a = _Znwm(48);
        char* b = _Znam(160);
        sink = a;
        sink = b;
        sink = NULL;
        _ZdaPv(b);
        _ZdlPv(a);
    }
}

int main(int argc, char** argv) {
    (void)argv;
    const int wait = argc > 1;
    if (wait) wait_stdin();
    churn_new();
    leak_new();
    leak_new_array();
    churn_new();
    static const char done[] = "leak_cxx done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    if (wait) wait_stdin();
    return 0;
}
