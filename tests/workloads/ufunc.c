// A uprobe target: pp_target() is called exactly N times, pp_other() N/2 times.
//   ufunc N
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) long pp_target(long x) {
    sink += x;
    return sink;
}

__attribute__((noinline)) long pp_other(long x) {
    sink -= x;
    return sink;
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 10;
    for (long i = 0; i < n; i++) {
        pp_target(i);
        if (i % 2) pp_other(i);
    }
    return 0;
}
