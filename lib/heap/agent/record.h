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

#endif
