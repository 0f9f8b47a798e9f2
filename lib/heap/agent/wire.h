/* The channel between perf-prof and its heap agent (lib/heap/agent/): one shared mapping that
 * perf-prof creates and sizes (a file under /dev/shm, owned by the target's user, unlinked once
 * the agent has mapped it), laid out as:
 *
 *   [pph_header, one 4 KiB page][sampling gaps][ring of pph_rec][stack table][frame pool]
 *
 * Only perf-prof writes the first part of the header (before the agent attaches) and the
 * control words; only the agent writes the ring's records, the stack table and the pool. Both
 * sides reach the shared words with __atomic builtins (this header is C and C++ alike), never
 * with a lock: the agent never waits on perf-prof, except at exit for the leak scan, and
 * there with a time-out.
 *
 * The ring is a bounded multi-producer, single-consumer queue of fixed 32-byte slots (Vyukov's
 * sequence numbers): slot i holds seq == pos when free for position pos, seq == pos + 1 once
 * the record of pos is written. A producer claims a position with one CAS on `head`; when the
 * slot is still full (perf-prof is behind) the record is dropped and counted, never waited
 * for. The consumer, having read the record at `tail`, sets its seq to tail + ring_slots. A
 * free is claimed before the allocator's free runs, an allocation after its malloc returned:
 * so a block freed by one thread and handed out again to another is seen freed first.
 *
 * Stacks are deduplicated in the process: the agent hashes a stack's return addresses, claims
 * an entry of the stack table for a new hash (CAS 0 → hash), copies the frames into the pool,
 * and only then publishes `ready`; an allocation record names its stack by entry index + 1.
 */
#ifndef PERFPROF_HEAP_AGENT_WIRE_H
#define PERFPROF_HEAP_AGENT_WIRE_H

#include <stdint.h>

#define PPH_MAGIC 0x48505050u /* "PPPH" */
#define PPH_VERSION 1u
#define PPH_HEADER_SIZE 4096u
#define PPH_MAX_FRAMES 127u /* return addresses per stack, as perf's default max stack */
#define PPH_GAPS 4096u      /* sampling gaps: heap::kSampleQuantiles */
#define PPH_ENV "PERFPROF_HEAP_CHANNEL" /* launched commands: the channel's path */
/* The agent turns itself off when perf-prof's heartbeat is older than this. */
#define PPH_HEARTBEAT_TIMEOUT_NS 3000000000ull
/* The agent waits at most this long at exit for perf-prof's leak scan. */
#define PPH_EXIT_SCAN_TIMEOUT_NS 30000000000ull

enum pph_mode {
    PPH_FULL = 0,    /* every allocation and free, each allocation with its stack */
    PPH_SAMPLED = 1, /* Poisson by bytes (mean `rate`): only kept allocations and their frees */
};

enum pph_flags {
    PPH_F_EXIT_SCAN = 1u, /* at exit, wait for perf-prof's leak scan (kmemleak --user) */
};

enum pph_state {
    PPH_STATE_NONE = 0,      /* the agent has not attached yet */
    PPH_STATE_RECORDING = 1, /* attached: allocations are recorded */
    PPH_STATE_OFF = 2,       /* detached, or perf-prof gone: nothing is recorded any more */
    PPH_STATE_FAILED = 3,    /* the agent could not attach: `error` says why */
};

enum pph_exit {
    PPH_EXIT_NONE = 0,
    PPH_EXIT_WAITING = 1, /* the process is exiting and waits for the scan (futex on scan_done) */
    PPH_EXIT_DONE = 2,    /* perf-prof scanned it (or gave up): the process goes on exiting */
};

enum pph_rec_type {
    PPH_REC_ALLOC = 1, /* ptr, size, stack: a block handed out (malloc … or realloc's new block) */
    PPH_REC_FREE = 2,  /* ptr: a block given back (free, or realloc's old block) */
};

/* What the call was: heap::FnKind's numbering. */
enum pph_fn {
    PPH_FN_MALLOC = 0,
    PPH_FN_CALLOC = 1,
    PPH_FN_REALLOC = 2,
    PPH_FN_REALLOCARRAY = 3,
    PPH_FN_MEMALIGN = 4, /* memalign, aligned_alloc */
    PPH_FN_POSIX_MEMALIGN = 5,
    PPH_FN_VALLOC = 6, /* valloc, pvalloc */
    PPH_FN_FREE = 7,
    PPH_FN_NEW = 8,    /* operator new, new[] (all overloads) */
    PPH_FN_DELETE = 9, /* operator delete, delete[] (all overloads) */
};

struct pph_rec {
    uint64_t seq;   /* see above */
    uint64_t ptr;   /* the block */
    uint64_t size;  /* ALLOC: bytes asked for (calloc: n * size); FREE: 0 */
    uint32_t stack; /* ALLOC: stack table index + 1; 0: no stack (none read, or table full) */
    uint16_t type;  /* pph_rec_type */
    uint16_t fn;    /* pph_fn */
};

struct pph_stack {
    uint64_t hash;    /* 0: empty entry; claimed by CAS */
    uint32_t frames;  /* first return address: index in the frame pool (uint64_t words) */
    uint16_t nframes; /* return addresses, innermost (the allocating call site) first */
    uint16_t ready;   /* 1 once frames and nframes are written (release) */
};

/* Memory of the agent's own (the channel, its private tables): never roots of a leak scan. */
struct pph_range {
    uint64_t start, end;
};
#define PPH_RANGES 8

struct pph_header {
    /* Set by perf-prof before the agent attaches; read-only afterwards. */
    uint32_t magic, version;
    uint32_t mode;       /* pph_mode */
    uint32_t flags;      /* pph_flags */
    uint32_t max_frames; /* at most PPH_MAX_FRAMES */
    int32_t profiler_pid;
    int32_t target_pid;  /* the process profiled: any other (a forked child, an exec'd
                          * grandchild that inherited LD_PRELOAD) is not, unless asked */
    uint32_t pad0;
    uint64_t rate;       /* PPH_SAMPLED: mean bytes between kept allocations */
    uint64_t map_size;   /* bytes of the whole mapping */
    uint64_t gaps_off;   /* PPH_GAPS uint64_t: quantiles of the exponential distribution (mean
                          * rate), drawn uniformly: heap::sample_gap_quantiles() */
    uint64_t ring_off, ring_slots;   /* ring_slots: a power of two */
    uint64_t stacks_off, stack_slots; /* stack_slots: a power of two */
    uint64_t pool_off, pool_words;

    /* perf-prof → agent (atomic) */
    uint64_t heartbeat_ns __attribute__((aligned(64))); /* CLOCK_MONOTONIC, renewed each drain */
    uint32_t detach;    /* 1: stop recording, restore what was patched */
    uint32_t scan_done; /* futex word the exiting thread waits on: perf-prof sets 1 and wakes */

    /* agent → perf-prof (atomic) */
    uint32_t state __attribute__((aligned(64))); /* pph_state */
    uint32_t exit_state; /* pph_exit */
    uint32_t exit_tid;   /* the thread waiting at exit, and its stack pointer */
    uint32_t agent_pid;  /* getpid() of the agent that attached */
    uint64_t exit_sp;
    uint64_t calls_alloc, calls_free;            /* every call seen, kept or not */
    uint64_t dropped_records, dropped_stacks;    /* ring full; stack table or pool full */
    uint64_t pool_used;                          /* words of the frame pool handed out */
    struct pph_range agent_ranges[PPH_RANGES];  /* the agent's own memory (leak scan) */
    char error[256];                             /* PPH_STATE_FAILED: why, one line */

    uint64_t head __attribute__((aligned(64))); /* next position a producer claims */
    uint64_t tail __attribute__((aligned(64))); /* next position the consumer reads */
};

#ifdef __cplusplus
static_assert(sizeof(struct pph_rec) == 32, "ring slot");
static_assert(sizeof(struct pph_stack) == 16, "stack entry");
static_assert(sizeof(struct pph_header) <= PPH_HEADER_SIZE, "header page");
#else
_Static_assert(sizeof(struct pph_rec) == 32, "ring slot");
_Static_assert(sizeof(struct pph_stack) == 16, "stack entry");
_Static_assert(sizeof(struct pph_header) <= PPH_HEADER_SIZE, "header page");
#endif

/* Functions the agent exports (found by the injector in the agent's symbol table):
 *   int perfprof_heap_attach(const char* channel_path);  0, or -1 with header->error set
 *   int perfprof_heap_detach(void);                        restores the patched slots */

#endif
