// CPU-bound load for bench/unwind_bench.py, built without frame pointers (-O2 -fomit-frame-pointer,
// the Makefile's rule for this file): THREADS threads (default: one per online CPU) run a small
// call tree whose stacks only call-frame information can unwind, and spend part of their time
// inside libc, some of it in callbacks libc makes into this program:
//
//   thread start -> worker -> step -> stage_sort -> qsort -> (libc) -> compare -> key_of
//                                  -> stage_text -> format_line -> snprintf / strtod / strlen
//                                  -> stage_mix  -> mix_block -> memcpy / memmove, hash loop
//
// Functions are noinline (and calls in tail position stay calls), so every level is a frame.
//
//   nofp [-t THREADS] [-d SECONDS]   (bench/load.h: the threads, the options and the result line;
//                                     an iteration is one pass through step())
#pragma GCC optimize("omit-frame-pointer", "no-optimize-sibling-calls")
#include "load.h"

NOINLINE static uint64_t key_of(const uint64_t* p) {
    uint64_t x = *p;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

NOINLINE static int compare(const void* a, const void* b) {
    const uint64_t ka = key_of(a), kb = key_of(b);
    return ka < kb ? -1 : ka > kb;
}

NOINLINE static uint64_t stage_sort(uint64_t* v, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) v[i] = seed + i * 0x2545f4914f6cdd1dull;
    qsort(v, n, sizeof *v, compare);
    return v[n / 2];
}

NOINLINE static size_t format_line(char* buf, size_t size, uint64_t x) {
    int n = snprintf(buf, size, "%llu %.6f %08llx", (unsigned long long)x, (double)(x % 100000) / 7.0,
                     (unsigned long long)(x >> 17));
    char* end = NULL;
    double d = strtod(strchr(buf, ' ') + 1, &end);
    return (size_t)n + strlen(buf) + (size_t)d;
}

NOINLINE static uint64_t stage_text(uint64_t x) {
    char buf[128];
    uint64_t s = 0;
    for (int i = 0; i < 8; i++) s += format_line(buf, sizeof buf, x + (uint64_t)i);
    return s;
}

NOINLINE static uint64_t mix_block(uint8_t* a, uint8_t* b, size_t n, uint64_t x) {
    memset(a, (int)(x & 0xff), n);
    memcpy(b, a, n);
    memmove(a + 1, b, n - 1);
    uint64_t h = x;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w;
        memcpy(&w, a + i, sizeof w);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

NOINLINE static uint64_t stage_mix(uint64_t x) {
    uint8_t a[1024], b[1024];
    return mix_block(a, b, sizeof a, x);
}

NOINLINE static uint64_t step(void* scratch, uint64_t x) {
    switch (x % 3) {
        case 0:
            return stage_sort(scratch, 256, x);
        case 1:
            return stage_text(x);
        default:
            return stage_mix(x);
    }
}

int main(int argc, char** argv) {
    return load_main(argc, argv, "nofp", step);
}
