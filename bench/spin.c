// CPU-bound load for bench/profile_bench.py: THREADS threads (default: one per online CPU) spin in
// a small call tree a few levels deep, so that the samples of a profiler carry realistic user
// stacks (thread start -> worker -> phase_a/phase_b -> mix/churn/... -> leaf).
// Frame pointers are kept (the pragma below: the Makefile's bench rule builds with plain -O2 -g;
// leaves get a frame through KEEP_FRAME, as gcc gives leaf functions none even with
// -fno-omit-frame-pointer), the functions are noinline and calls in tail position stay calls, so
// frame-pointer unwinding sees every level.
//
//   spin [-t THREADS] [-d SECONDS]   (bench/load.h: the threads, the options and the result line;
//                                     an iteration is one pass through the call tree, a few us)
#pragma GCC optimize("no-omit-frame-pointer", "no-optimize-sibling-calls")
#include "load.h"

// Makes a leaf function set up %rbp like the others, so its caller is not skipped by the unwinder.
#define KEEP_FRAME() __asm__ volatile("" ::"r"(__builtin_frame_address(0)))

// Leaves: plain arithmetic loops of different lengths, so the profile has a few distinct hot spots.
NOINLINE static uint64_t leaf_hash(uint64_t x, int n) {
    KEEP_FRAME();
    for (int i = 0; i < n; i++) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 29;
    }
    return x;
}

NOINLINE static uint64_t leaf_sum(const uint32_t* v, int n) {
    KEEP_FRAME();
    uint64_t s = 0;
    for (int i = 0; i < n; i++) s += (uint64_t)v[i] * (uint64_t)(i | 1);
    __asm__ volatile("" : "+r"(s));  // no vectorized short-cut across calls
    return s;
}

NOINLINE static uint64_t mix(uint64_t x) {
    return leaf_hash(x, 200) + leaf_hash(x + 1, 100);
}

NOINLINE static uint64_t churn(uint32_t* v, int n, uint64_t x) {
    for (int i = 0; i < n; i++) v[i] = (uint32_t)(x + (uint64_t)i * 2654435761u);
    return leaf_sum(v, n);
}

NOINLINE static uint64_t phase_a(uint64_t x) {
    return mix(x) ^ leaf_hash(x, 50);
}

NOINLINE static uint64_t phase_b(uint32_t* v, uint64_t x) {
    return churn(v, 256, x) + mix(x >> 1);
}

NOINLINE static uint64_t step(void* scratch, uint64_t x) {
    uint32_t* v = scratch;
    return (x & 1) ? phase_a(x) : phase_b(v, x);
}

int main(int argc, char** argv) {
    return load_main(argc, argv, "spin", step);
}
