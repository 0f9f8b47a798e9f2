/* The heap agent's sampler (PPH_SAMPLED): a Poisson process over the bytes a thread allocates,
 * as bpf/heap.bpf.c and tcmalloc sample. Each thread counts down the bytes left to its next
 * sampling point; the allocation that reaches it is kept and the next gap is drawn, uniformly,
 * from the channel's table of quantiles of the exponential distribution of mean `rate`
 * (heap::sample_gap_quantiles). As the gap is memoryless, an allocation of s bytes is kept with
 * probability 1 - exp(-s / rate), whatever came before. Plain C, header-only, no library call:
 * shared by the agent (one sampler per thread, in its TLS) and the unit tests. */
#ifndef PERFPROF_HEAP_AGENT_SAMPLER_H
#define PERFPROF_HEAP_AGENT_SAMPLER_H

#include <stdint.h>

#include "heap/agent/wire.h"

struct pph_sampler {
    int64_t left; /* bytes to the next sampling point */
    uint64_t rng; /* xorshift64 state; 0: not seeded yet */
};

/* splitmix64's finaliser: turns any seed (a thread's address, a clock) into a good state. */
static inline uint64_t pph_mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t pph_xorshift64(uint64_t* s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* A gap drawn uniformly from the PPH_GAPS quantiles (a power of two: the mask is unbiased). */
static inline int64_t pph_sample_gap(struct pph_sampler* s, const uint64_t* gaps) {
    return (int64_t)gaps[(pph_xorshift64(&s->rng) >> 20) & (PPH_GAPS - 1)];
}

/* Starts a thread's sampler: its first gap is drawn too, so that no thread's first allocation
 * is favoured. */
static inline void pph_sampler_seed(struct pph_sampler* s, const uint64_t* gaps, uint64_t seed) {
    s->rng = pph_mix64(seed);
    if (!s->rng) s->rng = 1;
    s->left = pph_sample_gap(s, gaps);
}

/* Whether to keep an allocation of `size` bytes. The fast path: one subtraction and a test. */
static inline int pph_sampled(struct pph_sampler* s, const uint64_t* gaps, uint64_t size) {
    s->left -= (int64_t)size;
    if (__builtin_expect(s->left > 0, 1)) return 0;
    s->left = pph_sample_gap(s, gaps);
    return 1;
}

#endif
