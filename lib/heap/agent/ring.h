/* The ring of the heap agent's channel (wire.h): both ends, shared by the agent (producers,
 * any thread of the target) and perf-prof (the one consumer), and by the unit tests. Plain C,
 * header-only, no library call: the agent runs inside malloc. */
#ifndef PERFPROF_HEAP_AGENT_RING_H
#define PERFPROF_HEAP_AGENT_RING_H

#include <stdint.h>

#include "heap/agent/wire.h"

/* Claims a position and writes `r` (its seq is set here). Returns 0, or -1 when the ring is
 * full: the record is dropped and counted in dropped_records, nobody waits. */
static inline int pph_ring_push(struct pph_header* h, struct pph_rec* ring, uint64_t ptr, uint64_t size,
                                uint32_t stack, uint16_t type, uint16_t fn) {
    const uint64_t mask = h->ring_slots - 1;
    uint64_t pos = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
    for (;;) {
        struct pph_rec* s = &ring[pos & mask];
        const uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        const int64_t dif = (int64_t)(seq - pos);
        if (dif == 0) {
            if (__atomic_compare_exchange_n(&h->head, &pos, pos + 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                s->ptr = ptr;
                s->size = size;
                s->stack = stack;
                s->type = type;
                s->fn = fn;
                __atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
                return 0;
            }
            /* pos was reloaded by the failed CAS */
        } else if (dif < 0) {
            __atomic_fetch_add(&h->dropped_records, 1, __ATOMIC_RELAXED);
            return -1;
        } else {
            pos = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
        }
    }
}

/* The consumer's side. Copies the record at tail into *out and frees its slot: 1; 0 when the
 * record at tail is not written yet (the ring is empty, or its producer is between its claim and
 * its write). */
static inline int pph_ring_pop(struct pph_header* h, struct pph_rec* ring, struct pph_rec* out) {
    const uint64_t tail = __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
    struct pph_rec* s = &ring[tail & (h->ring_slots - 1)];
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != tail + 1) return 0;
    *out = *s;
    __atomic_store_n(&s->seq, tail + h->ring_slots, __ATOMIC_RELEASE);
    __atomic_store_n(&h->tail, tail + 1, __ATOMIC_RELEASE);
    return 1;
}

/* Whether a position was claimed but its record is not written (the consumer's stall): a
 * producer that died, or was forked away, between its claim and its write. */
static inline int pph_ring_stalled(const struct pph_header* h) {
    return __atomic_load_n(&h->head, __ATOMIC_RELAXED) != __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
}

/* Skips the record at tail: its slot is freed as if read. Only once its producer cannot write
 * any more (the process is gone): a producer that writes after the skip would leave its slot
 * full for good. Returns the position skipped. */
static inline uint64_t pph_ring_skip(struct pph_header* h, struct pph_rec* ring) {
    const uint64_t tail = __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
    __atomic_store_n(&ring[tail & (h->ring_slots - 1)].seq, tail + h->ring_slots, __ATOMIC_RELEASE);
    __atomic_store_n(&h->tail, tail + 1, __ATOMIC_RELEASE);
    return tail;
}

/* Initial seq of every slot (perf-prof, before the agent attaches): slot i free for position i. */
static inline void pph_ring_init(struct pph_rec* ring, uint64_t slots) {
    for (uint64_t i = 0; i < slots; i++) ring[i].seq = i;
}

#endif
