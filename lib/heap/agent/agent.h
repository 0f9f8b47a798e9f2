/* The heap agent's parts, as they see each other (not an interface of the agent: wire.h is).
 *   agent.c   the channel, the per-thread state, recording (ring, stack table, sampled set),
 *             attach, detach, fork and exit
 *   hooks.c   the interposed functions: the malloc family and operator new/delete
 *   got.c     inject mode: the GOT slots of the loaded objects, patched and restored */
#ifndef PERFPROF_HEAP_AGENT_AGENT_H
#define PERFPROF_HEAP_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "heap/agent/sampler.h"
#include "heap/agent/unwind.h"
#include "heap/agent/wire.h"

#define PPH_EXPORT __attribute__((visibility("default")))
#define PPH_HOOK __attribute__((visibility("hidden"), noinline))
#define PPH_LIKELY(x) __builtin_expect(!!(x), 1)
#define PPH_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The functions the agent stands in for; index into pph_real and pph_hooks. */
enum pph_sym {
    PPH_S_MALLOC,
    PPH_S_CALLOC,
    PPH_S_REALLOC,
    PPH_S_REALLOCARRAY,
    PPH_S_FREE,
    PPH_S_POSIX_MEMALIGN,
    PPH_S_ALIGNED_ALLOC,
    PPH_S_MEMALIGN,
    PPH_S_VALLOC,
    PPH_S_PVALLOC,
    PPH_S_NEW,           /* _Znwm */
    PPH_S_NEW_ARR,       /* _Znam */
    PPH_S_NEW_NT,        /* _ZnwmRKSt9nothrow_t */
    PPH_S_NEW_ARR_NT,    /* _ZnamRKSt9nothrow_t */
    PPH_S_NEW_AL,        /* _ZnwmSt11align_val_t */
    PPH_S_NEW_ARR_AL,    /* _ZnamSt11align_val_t */
    PPH_S_NEW_AL_NT,     /* _ZnwmSt11align_val_tRKSt9nothrow_t */
    PPH_S_NEW_ARR_AL_NT, /* _ZnamSt11align_val_tRKSt9nothrow_t */
    PPH_S_DEL,           /* _ZdlPv */
    PPH_S_DEL_ARR,       /* _ZdaPv */
    PPH_S_DEL_SZ,        /* _ZdlPvm */
    PPH_S_DEL_ARR_SZ,    /* _ZdaPvm */
    PPH_S_DEL_NT,        /* _ZdlPvRKSt9nothrow_t */
    PPH_S_DEL_ARR_NT,    /* _ZdaPvRKSt9nothrow_t */
    PPH_S_DEL_AL,        /* _ZdlPvSt11align_val_t */
    PPH_S_DEL_ARR_AL,    /* _ZdaPvSt11align_val_t */
    PPH_S_DEL_SZ_AL,     /* _ZdlPvmSt11align_val_t */
    PPH_S_DEL_ARR_SZ_AL, /* _ZdaPvmSt11align_val_t */
    PPH_S_DEL_AL_NT,     /* _ZdlPvSt11align_val_tRKSt9nothrow_t */
    PPH_S_DEL_ARR_AL_NT, /* _ZdaPvSt11align_val_tRKSt9nothrow_t */
    PPH_S_DLOPEN,        /* inject mode only */
    PPH_S_DLCLOSE,
    PPH_S_COUNT
};

/* Name and hook of each pph_sym (hooks.c). */
extern const char* const pph_sym_names[PPH_S_COUNT];
extern void* const pph_hooks[PPH_S_COUNT];
/* The real function of each pph_sym (0 until resolved). */
extern void* pph_real[PPH_S_COUNT];
/* Resolves pph_real[s] (preload: the next definition after ours; inject: the process's own). */
void* pph_resolve(int s);
/* What an operator new/delete hook calls when the process has no such function to forward to
 * (hooks.c); 0 for the C functions. */
void* pph_cxx_fallback(int s);

/* Per-thread state: initial-exec TLS, a few words. */
struct pph_tls {
    struct pph_sampler sampler;
    uint32_t guard;           /* inside a hook: nested calls pass straight through */
    uint32_t tick;            /* calls (full mode) or flushes (sampled) since the last liveness check */
    uint32_t n_alloc, n_free; /* calls not yet added to the header (sampled mode) */
    uint32_t started;         /* the sampler is seeded, the thread's flush is registered */
    uint32_t gen;             /* pph_gen of the counts */
};
extern __thread struct pph_tls pph_t __attribute__((tls_model("initial-exec")));

/* 1 while recording: hooks check it first. */
extern int pph_on;
/* Attach sessions so far (inject mode may attach again after a detach). */
extern uint32_t pph_gen;
/* 1 when the agent was loaded by the injector (slots patched), 0 for LD_PRELOAD. */
extern int pph_injected;

/* The periodic liveness check (heartbeat, detach request); every ~4096 calls of a thread. */
void pph_check_live(void);
/* A bump allocator for the calls made while the real functions are resolved (preload). */
#define PPH_BOOT_SIZE (64u << 10)
extern unsigned char pph_boot[PPH_BOOT_SIZE];
void* pph_boot_alloc(size_t size, size_t align);
static inline int pph_is_boot(const void* p) {
    return (uintptr_t)p - (uintptr_t)pph_boot < PPH_BOOT_SIZE;
}
size_t pph_boot_size(const void* p);

/* got.c: patches the slots of the pph_syms in every loaded object not patched yet (never the
 * agent's own). Returns the slots patched, or -1 with a reason in *why. */
int pph_got_patch_new(const char** why);
/* The saved-slot tables' memory (0, 0 before the first patch). */
void pph_got_tables(uint64_t* start, uint64_t* end);
/* Restores every patched slot to its original value. */
void pph_got_restore(void);
/* Forgets the slots of objects that were unloaded (after dlclose). */
void pph_got_forget_unloaded(void);
/* The first definition of a function in the loaded objects (the agent's excepted), by their GNU
 * hash tables; 0 when none (an IFUNC, an object without DT_GNU_HASH). */
void* pph_scope_lookup(const char* name);
/* The file dlopen would open for `file` called from `caller` (its RUNPATH/RPATH, $ORIGIN):
 * `file` itself when nothing applies, else a path written into buf. */
const char* pph_caller_path(const char* file, const void* caller, char* buf, size_t size);

#endif
