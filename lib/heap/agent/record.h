/* The heap agent's recording state (record.c), set up by the attach (agent.c). */
#ifndef PERFPROF_HEAP_AGENT_RECORD_H
#define PERFPROF_HEAP_AGENT_RECORD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/agent/agent.h"

struct pph_rec_state {
    struct pph_header* h; /* the channel; 0 before the attach */
    struct pph_rec* ring;
    struct pph_stack* stacks;
    uint64_t* pool;
    const uint64_t* gaps;
    uint64_t stack_slots, pool_words;
    uint32_t mode, max_frames;
    /* sampled mode: the kept pointers and their filter (mmap'd, never malloc'd) */
    uint64_t* set;
    uint8_t* filter;
    size_t set_bytes, filter_bytes;
    uint32_t set_count;
    int set_lock;
    /* flushes a thread's batched counts when it ends */
    pthread_key_t key;
    int key_ok;
};
extern struct pph_rec_state pph_rs;

int pph_set_init(void);
void pph_flush_counts(struct pph_tls* t);

/* The hash of a block's address: its bucket in the sampled set and in the filter. */
#define PPH_SET_BITS 20    /* 1 Mi entries, 8 MiB reserved, touched as used */
#define PPH_FILTER_BITS 18 /* 256 KiB of counters (saturating) */
static inline uint64_t pph_ptr_hash(uint64_t p) {
    return (p >> 4) * 0x9e3779b97f4a7c15ull;
}
static inline uint32_t pph_filter_slot(uint64_t h) {
    return (uint32_t)(h >> (64 - PPH_FILTER_BITS));
}

#define PPH_CHECK_EVERY 4096 /* calls of a thread between two liveness checks */
#define PPH_FLUSH_EVERY 1024 /* sampled mode: calls of a kind between two flushes of a thread's counts */

/* The hooks' fast paths, inline. Sampled mode: 1 when an allocation of `size` needs nothing more
 * (not kept, no flush due: the liveness check comes with every 4th flush); the thread's first
 * call always takes the slow path (its sampler starts at 0). */
static inline int pph_alloc_done(struct pph_tls* t, uint64_t size) {
    if (pph_rs.mode != PPH_SAMPLED) return 0;
    const uint32_t n = ++t->n_alloc;
    return !pph_sampler_take(&t->sampler, size) && n < PPH_FLUSH_EVERY;
}

/* Sampled mode: 1 when a free needs nothing more: the block was never kept (its filter counter
 * is 0), no flush due. */
static inline int pph_free_done(struct pph_tls* t, const void* p) {
    if (pph_rs.mode != PPH_SAMPLED) return 0;
    if (++t->n_free >= PPH_FLUSH_EVERY) return 0;
    return __atomic_load_n(&pph_rs.filter[pph_filter_slot(pph_ptr_hash((uint64_t)(uintptr_t)p))],
                           __ATOMIC_RELAXED) == 0;
}

/* Records an allocation (its stack from the hook's caller: pc, sp and bp as PPH_CALLER_FRAME),
 * after the fast path, or a free. */
void pph_record_alloc(void* p, uint64_t size, int fn, uint64_t pc, uint64_t sp, uint64_t bp);
void pph_record_free(void* p, int fn);

/* In a hook: records the block `p` of `n` bytes unless the fast path says there is nothing to do. */
#define PPH_RECORD_ALLOC(t, p, n, fn)                                               \
    do {                                                                            \
        if ((p) && !pph_alloc_done((t), (n)))                                       \
            pph_record_alloc((p), (n), (fn), (uint64_t)__builtin_return_address(0), \
                             (uint64_t)__builtin_frame_address(0) + 16,             \
                             *(uint64_t*)__builtin_frame_address(0));               \
    } while (0)
/* The same after the fast path was taken before the call (malloc, calloc, operator new). */
#define PPH_RECORD_KEPT(p, n, fn)                                                   \
    do {                                                                            \
        if (p)                                                                      \
            pph_record_alloc((p), (n), (fn), (uint64_t)__builtin_return_address(0), \
                             (uint64_t)__builtin_frame_address(0) + 16,             \
                             *(uint64_t*)__builtin_frame_address(0));               \
    } while (0)
#define PPH_RECORD_FREE(t, p, fn)                                 \
    do {                                                          \
        if (!pph_free_done((t), (p))) pph_record_free((p), (fn)); \
    } while (0)

#endif
