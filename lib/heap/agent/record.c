/* The heap agent's recording: what a hook does while the agent is on. Full mode writes every
 * allocation (with its stack) and every free into the ring; sampled mode keeps an allocation
 * when the thread's byte countdown crosses zero (sampler.h), remembers the kept pointer in a
 * private set, and writes only kept allocations and their frees. Nothing here allocates or
 * takes a lock but the sampled set's spin lock, held for a few loads. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "heap/agent/agent.h"
#include "heap/agent/record.h"
#include "heap/agent/ring.h"

struct pph_rec_state pph_rs;

/* ---- the sampled set: kept pointers, open addressing (linear probing, deletion by backward
 * shift, no tombstones), behind a byte-per-bucket-group filter so that the free of a block
 * never kept costs one load and a test. Rare (one kept allocation in `rate` bytes): a spin
 * lock is enough. ---- */

#define SET_BITS PPH_SET_BITS
#define SET_SIZE (1u << SET_BITS)
#define SET_MAX (SET_SIZE / 4 * 3)
#define FILTER_BITS PPH_FILTER_BITS
#define ptr_hash pph_ptr_hash
#define filter_slot pph_filter_slot

static inline uint32_t set_slot(uint64_t h) {
    return (uint32_t)(h >> (64 - SET_BITS));
}

int pph_set_init(void) {
    if (pph_rs.set) {
        /* A new session: empty (private anonymous pages read as zeros once dropped). */
        madvise(pph_rs.set, pph_rs.set_bytes, MADV_DONTNEED);
        madvise(pph_rs.filter, pph_rs.filter_bytes, MADV_DONTNEED);
        pph_rs.set_count = 0;
        return 0;
    }
    void* s = mmap(0, (size_t)SET_SIZE * 8, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) return -1;
    void* f = mmap(0, 1u << FILTER_BITS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (f == MAP_FAILED) {
        munmap(s, (size_t)SET_SIZE * 8);
        return -1;
    }
    pph_rs.set = s;
    pph_rs.filter = f;
    pph_rs.set_bytes = (size_t)SET_SIZE * 8;
    pph_rs.filter_bytes = 1u << FILTER_BITS;
    return 0;
}

static void set_lock(void) {
    while (__atomic_exchange_n(&pph_rs.set_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&pph_rs.set_lock, __ATOMIC_RELAXED)) __builtin_ia32_pause();
}
static void set_unlock(void) {
    __atomic_store_n(&pph_rs.set_lock, 0, __ATOMIC_RELEASE);
}

/* Adds a kept pointer; 0, or -1 when the set is full. */
static int set_add(uint64_t p) {
    const uint64_t h = ptr_hash(p);
    int rc = -1;
    set_lock();
    if (pph_rs.set_count < SET_MAX) {
        uint32_t i = set_slot(h);
        while (pph_rs.set[i] && pph_rs.set[i] != p) i = (i + 1) & (SET_SIZE - 1);
        if (!pph_rs.set[i]) {
            pph_rs.set[i] = p;
            pph_rs.set_count++;
            uint8_t* c = &pph_rs.filter[filter_slot(h)];
            if (*c != 255) __atomic_store_n(c, (uint8_t)(*c + 1), __ATOMIC_RELAXED);
        }
        rc = 0;
    }
    set_unlock();
    return rc;
}

/* Removes a pointer: 1 when it was kept. */
static int set_remove(uint64_t p) {
    const uint64_t h = ptr_hash(p);
    int found = 0;
    set_lock();
    uint32_t i = set_slot(h);
    while (pph_rs.set[i] && pph_rs.set[i] != p) i = (i + 1) & (SET_SIZE - 1);
    if (pph_rs.set[i]) {
        found = 1;
        pph_rs.set_count--;
        /* Backward shift: later entries of the cluster that may move into the hole do. */
        uint32_t hole = i, j = i;
        for (;;) {
            j = (j + 1) & (SET_SIZE - 1);
            const uint64_t q = pph_rs.set[j];
            if (!q) break;
            const uint32_t home = set_slot(ptr_hash(q));
            /* q may move to hole when its home is not in (hole, j] (cyclically). */
            if (((j - home) & (SET_SIZE - 1)) >= ((j - hole) & (SET_SIZE - 1))) {
                pph_rs.set[hole] = q;
                hole = j;
            }
        }
        pph_rs.set[hole] = 0;
        uint8_t* c = &pph_rs.filter[filter_slot(h)];
        if (*c != 255) __atomic_store_n(c, (uint8_t)(*c - 1), __ATOMIC_RELAXED);
    }
    set_unlock();
    return found;
}

/* ---- stacks ---- */

static inline uint64_t frames_hash(const uint64_t* f, int n) {
    uint64_t h = 0x84222325cbf29ce4ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= f[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

/* Claims `n` words of the pool: their index, or -1 when it is full. */
static int64_t pool_claim(struct pph_header* hd, uint32_t n) {
    uint64_t used = __atomic_load_n(&hd->pool_used, __ATOMIC_RELAXED);
    do {
        if (used + n > pph_rs.pool_words) return -1;
    } while (
        !__atomic_compare_exchange_n(&hd->pool_used, &used, used + n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return (int64_t)used;
}

/* The stack id (table index + 1) of the walk from `caller`; 0 when none. */
static uint32_t stack_id(struct pph_header* hd, struct pph_frame caller) {
    uint64_t buf[PPH_MAX_FRAMES];
    const int n = pph_unwind(caller, buf, (int)pph_rs.max_frames);
    if (n <= 0) return 0;
    const uint64_t h = frames_hash(buf, n);
    const uint64_t mask = pph_rs.stack_slots - 1;
    const uint64_t probes = pph_rs.stack_slots < 1024 ? pph_rs.stack_slots : 1024;
    for (uint64_t k = 0, i = h & mask; k < probes; k++, i = (i + 1) & mask) {
        struct pph_stack* e = &pph_rs.stacks[i];
        uint64_t cur = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            if (!__atomic_compare_exchange_n(&e->hash, &cur, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                if (cur != h) continue; /* another stack took it: probe on */
                return (uint32_t)i + 1;
            }
            const int64_t at = pool_claim(hd, (uint32_t)n);
            if (at < 0) {
                /* Ready with no frames: every later use of this stack counts as dropped too. */
                e->nframes = 0;
                __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
                __atomic_fetch_add(&hd->dropped_stacks, 1, __ATOMIC_RELAXED);
                return 0;
            }
            memcpy(&pph_rs.pool[at], buf, (size_t)n * 8);
            e->frames = (uint32_t)at;
            e->nframes = (uint16_t)n;
            __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
            return (uint32_t)i + 1;
        }
        if (cur == h) {
            /* Being written by its claimer (not ready yet): perf-prof reads it once it is. */
            if (__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) && e->nframes == 0) break;
            return (uint32_t)i + 1;
        }
    }
    __atomic_fetch_add(&hd->dropped_stacks, 1, __ATOMIC_RELAXED);
    return 0;
}

/* ---- the hooks' entry points ---- */

/* Adds the thread's batched call counts to the header (sampled mode). */
void pph_flush_counts(struct pph_tls* t) {
    struct pph_header* hd = pph_rs.h;
    if (!hd) return;
    const uint32_t gen = __atomic_load_n(&pph_gen, __ATOMIC_RELAXED);
    if (PPH_UNLIKELY(t->gen != gen)) {
        /* Counted in an earlier session, or partly: not this channel's. */
        t->gen = gen;
        t->n_alloc = t->n_free = 0;
        return;
    }
    if (t->n_alloc) __atomic_fetch_add(&hd->calls_alloc, t->n_alloc, __ATOMIC_RELAXED);
    if (t->n_free) __atomic_fetch_add(&hd->calls_free, t->n_free, __ATOMIC_RELAXED);
    t->n_alloc = t->n_free = 0;
}

/* A thread's first recorded call: its sampler is seeded, its counts flushed (and, full mode, its
 * dead stack scrubbed) when it ends. */
static void thread_start(struct pph_tls* t) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pph_sampler_seed(&t->sampler, pph_rs.gaps,
                     (uint64_t)(uintptr_t)t ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec);
    t->started = 1;
    t->gen = __atomic_load_n(&pph_gen, __ATOMIC_RELAXED);
    if (pph_rs.key_ok) pthread_setspecific(pph_rs.key, (void*)1);
}

/* The slow paths, after the hooks' inline fast paths (record.h) counted the call. */

/* Sampled mode: the periodic work a fast path left (the flush of the counts, and with every
 * 4th flush the liveness check; `tick` counts the flushes here); 0 when the agent went off. */
static int periodic(struct pph_tls* t) {
    if (t->n_alloc >= PPH_FLUSH_EVERY || t->n_free >= PPH_FLUSH_EVERY) {
        pph_flush_counts(t);
        if (++t->tick >= PPH_CHECK_EVERY / PPH_FLUSH_EVERY) pph_check_live(); /* resets tick */
    }
    return __atomic_load_n(&pph_on, __ATOMIC_RELAXED);
}

void pph_record_alloc(void* p, uint64_t size, int fn, uint64_t pc, uint64_t sp, uint64_t bp) {
    struct pph_tls* t = &pph_t;
    struct pph_header* hd = pph_rs.h;
    if (pph_rs.mode == PPH_SAMPLED) {
        if (!periodic(t)) return;
        if (PPH_UNLIKELY(!t->started)) {
            /* The first call of the thread: its countdown starts now, this allocation included. */
            thread_start(t);
            pph_sampler_take(&t->sampler, size);
        }
        if (PPH_LIKELY(t->sampler.left > 0)) return;
        pph_sampler_rearm(&t->sampler, pph_rs.gaps);
        if (set_add((uint64_t)(uintptr_t)p) < 0) {
            __atomic_fetch_add(&hd->dropped_records, 1, __ATOMIC_RELAXED);
            return;
        }
    } else {
        if (PPH_UNLIKELY(++t->tick >= PPH_CHECK_EVERY)) {
            pph_check_live();
            if (!__atomic_load_n(&pph_on, __ATOMIC_RELAXED)) return;
        }
        /* The thread's end is seen (agent.c: its dead stack is scrubbed for the leak scan). */
        if (PPH_UNLIKELY(!t->started)) thread_start(t);
        __atomic_fetch_add(&hd->calls_alloc, 1, __ATOMIC_RELAXED);
    }
    const struct pph_frame caller = {pc, sp, bp};
    pph_ring_push(hd, pph_rs.ring, (uint64_t)(uintptr_t)p, size, stack_id(hd, caller), PPH_REC_ALLOC,
                  (uint16_t)fn);
}

void pph_record_free(void* p, int fn) {
    struct pph_tls* t = &pph_t;
    struct pph_header* hd = pph_rs.h;
    if (pph_rs.mode == PPH_SAMPLED) {
        /* Counted already; the block may still be kept even when the agent just went off: its
         * FREE then pairs the ALLOC perf-prof holds. */
        periodic(t);
        if (__atomic_load_n(&pph_rs.filter[filter_slot(ptr_hash((uint64_t)(uintptr_t)p))],
                            __ATOMIC_RELAXED) == 0)
            return;
        if (!set_remove((uint64_t)(uintptr_t)p)) return;
    } else {
        if (PPH_UNLIKELY(++t->tick >= PPH_CHECK_EVERY)) pph_check_live();
        __atomic_fetch_add(&hd->calls_free, 1, __ATOMIC_RELAXED);
    }
    pph_ring_push(hd, pph_rs.ring, (uint64_t)(uintptr_t)p, 0, 0, PPH_REC_FREE, (uint16_t)fn);
}
