/* The heap agent's interposed functions: the malloc family and the C++ operator new/delete
 * family (by mangled name). With LD_PRELOAD the dynamic linker binds the program's calls to
 * these definitions; when injected, got.c writes their addresses into the objects' GOT slots.
 * Either way each one calls the real function (pph_real) and records around it while the agent
 * is on; nested calls (the real function's own, the agent's, the loader's) pass straight
 * through. The hooks stay callable after a detach: they then call the real function directly.
 *
 * Each hook is noinline and compiled with frame pointers, so that PPH_CALLER_FRAME() names its
 * caller: the walk starts at the program's call site. malloc_usable_size is not interposed: the
 * agent never changes a block's layout. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heap/agent/agent.h"
#include "heap/agent/record.h"

const char* const pph_sym_names[PPH_S_COUNT] = {
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "free",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv",
    "_ZdaPv",
    "_ZdlPvm",
    "_ZdaPvm",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t",
    "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    "dlopen",
    "dlclose",
};

typedef void* (*alloc1_fn)(size_t);
typedef void* (*alloc2_fn)(size_t, size_t);
typedef void* (*realloc_fn)(void*, size_t);
typedef void* (*reallocarray_fn)(void*, size_t, size_t);
typedef int (*posix_memalign_fn)(void**, size_t, size_t);
typedef void (*free_fn)(void*);
typedef void (*free2_fn)(void*, size_t);
typedef void (*free3_fn)(void*, size_t, size_t);
typedef void* (*new_nt_fn)(size_t, const void*);
typedef void* (*new_al_nt_fn)(size_t, size_t, const void*);

/* The real function of `s`, resolved on first use. 0 only while the agent resolves (preload:
 * dlsym's own allocations then come from the bootstrap arena). */
static inline void* real(int s) {
    void* f = __atomic_load_n(&pph_real[s], __ATOMIC_RELAXED);
    return PPH_LIKELY(f != 0) ? f : pph_resolve(s);
}

/* Whether this call is to be recorded: the agent is on and the call is not nested. */
static inline int entering(struct pph_tls* t) {
    return PPH_LIKELY(!__atomic_load_n(&pph_on, __ATOMIC_RELAXED)) ? 0 : !t->guard;
}

/* ---- the malloc family ---- */

/* The hottest hooks keep their fast path free of callee-saved registers: what is rare (passing
 * through, a kept block) is out of line. */
#define PPH_CALLER_ARGS                                                                \
    (uint64_t) __builtin_return_address(0), (uint64_t)__builtin_frame_address(0) + 16, \
        *(uint64_t*)__builtin_frame_address(0)

__attribute__((noinline, cold)) static void* malloc_pass(size_t n) {
    alloc1_fn f = (alloc1_fn)real(PPH_S_MALLOC);
    return f ? f(n) : pph_boot_alloc(n, 16);
}

__attribute__((noinline)) static void* malloc_kept(size_t n, uint64_t pc, uint64_t sp, uint64_t bp) {
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    void* p = ((alloc1_fn)pph_real[PPH_S_MALLOC])(n);
    if (p) pph_record_alloc(p, n, PPH_FN_MALLOC, pc, sp, bp);
    t->guard = 0;
    return p;
}

PPH_HOOK void* pph_h_malloc(size_t n) {
    struct pph_tls* t = &pph_t;
    if (PPH_UNLIKELY(!entering(t))) return malloc_pass(n);
    if (PPH_LIKELY(pph_alloc_done(t, n))) return ((alloc1_fn)pph_real[PPH_S_MALLOC])(n);
    return malloc_kept(n, PPH_CALLER_ARGS);
}

__attribute__((noinline, cold)) static void* calloc_pass(size_t n, size_t size) {
    alloc2_fn f = (alloc2_fn)real(PPH_S_CALLOC);
    size_t total;
    if (f) return f(n, size);
    if (__builtin_mul_overflow(n, size, &total)) return 0;
    return pph_boot_alloc(total, 16); /* the arena is zeroed and never reused */
}

__attribute__((noinline)) static void* calloc_kept(size_t n, size_t size, uint64_t pc, uint64_t sp,
                                                   uint64_t bp) {
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    void* p = ((alloc2_fn)pph_real[PPH_S_CALLOC])(n, size);
    if (p) pph_record_alloc(p, (uint64_t)n * size, PPH_FN_CALLOC, pc, sp, bp);
    t->guard = 0;
    return p;
}

PPH_HOOK void* pph_h_calloc(size_t n, size_t size) {
    struct pph_tls* t = &pph_t;
    if (PPH_UNLIKELY(!entering(t))) return calloc_pass(n, size);
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) total = SIZE_MAX;
    if (PPH_LIKELY(pph_alloc_done(t, total))) return ((alloc2_fn)pph_real[PPH_S_CALLOC])(n, size);
    return calloc_kept(n, size, PPH_CALLER_ARGS);
}

/* realloc of a bootstrap block: a new block of the real allocator, the old bytes copied. */
static void* boot_realloc(void* old, size_t n) {
    void* p = pph_h_malloc(n);
    if (p) {
        size_t have = pph_boot_size(old);
        memcpy(p, old, have < n ? have : n);
    }
    return p;
}

__attribute__((noinline, cold)) static void* realloc_pass(void* old, size_t n) {
    realloc_fn f = (realloc_fn)real(PPH_S_REALLOC);
    if (f) return f(old, n);
    return old ? 0 : pph_boot_alloc(n, 16);
}

/* free_old: the old block's FREE is recorded here, and the new block counted; else the fast path
 * counted the new block already and the old one needs nothing. */
__attribute__((noinline)) static void* realloc_slow(void* old, size_t n, int free_old, uint64_t pc,
                                                    uint64_t sp, uint64_t bp) {
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    if (free_old) pph_record_free(old, PPH_FN_REALLOC);
    void* p = ((realloc_fn)pph_real[PPH_S_REALLOC])(old, n);
    if (p && (!free_old || !pph_alloc_done(t, n))) pph_record_alloc(p, n, PPH_FN_REALLOC, pc, sp, bp);
    t->guard = 0;
    return p;
}

/* A failed realloc (NULL for n > 0) leaves the old block in place, but its FREE was already
 * recorded (it must be, before the real call: the block may be handed out again at once): the
 * old block stays untracked from then on. */
PPH_HOOK void* pph_h_realloc(void* old, size_t n) {
    struct pph_tls* t = &pph_t;
    if (PPH_UNLIKELY(old && pph_is_boot(old))) return boot_realloc(old, n);
    if (PPH_UNLIKELY(!entering(t))) return realloc_pass(old, n);
    if (!old || pph_free_done(t, old)) {
        if (PPH_LIKELY(pph_alloc_done(t, n))) return ((realloc_fn)pph_real[PPH_S_REALLOC])(old, n);
        return realloc_slow(old, n, 0, PPH_CALLER_ARGS);
    }
    return realloc_slow(old, n, 1, PPH_CALLER_ARGS);
}

PPH_HOOK void* pph_h_reallocarray(void* old, size_t n, size_t size) {
    struct pph_tls* t = &pph_t;
    size_t total;
    if (PPH_UNLIKELY(old && pph_is_boot(old))) {
        if (__builtin_mul_overflow(n, size, &total)) {
            errno = ENOMEM;
            return 0;
        }
        return boot_realloc(old, total);
    }
    if (!entering(t)) {
        reallocarray_fn f = (reallocarray_fn)real(PPH_S_REALLOCARRAY);
        return f ? f(old, n, size) : 0;
    }
    t->guard = 1;
    /* An overflowing size fails before anything is freed. */
    if (old && !__builtin_mul_overflow(n, size, &total)) PPH_RECORD_FREE(t, old, PPH_FN_REALLOCARRAY);
    void* p = ((reallocarray_fn)pph_real[PPH_S_REALLOCARRAY])(old, n, size);
    PPH_RECORD_ALLOC(t, p, (uint64_t)n * size, PPH_FN_REALLOCARRAY);
    t->guard = 0;
    return p;
}

__attribute__((noinline, cold)) static void free_pass(void* p) {
    free_fn f = (free_fn)real(PPH_S_FREE);
    if (f) f(p);
}

__attribute__((noinline)) static void free_kept(void* p) {
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    pph_record_free(p, PPH_FN_FREE);
    ((free_fn)pph_real[PPH_S_FREE])(p);
    t->guard = 0;
}

PPH_HOOK void pph_h_free(void* p) {
    struct pph_tls* t = &pph_t;
    if (PPH_UNLIKELY(!p) || PPH_UNLIKELY(pph_is_boot(p))) return;
    if (PPH_UNLIKELY(!entering(t))) {
        free_pass(p);
        return;
    }
    if (PPH_LIKELY(pph_free_done(t, p))) {
        ((free_fn)pph_real[PPH_S_FREE])(p);
        return;
    }
    free_kept(p);
}

PPH_HOOK int pph_h_posix_memalign(void** out, size_t align, size_t n) {
    struct pph_tls* t = &pph_t;
    if (!entering(t)) {
        posix_memalign_fn f = (posix_memalign_fn)real(PPH_S_POSIX_MEMALIGN);
        if (f) return f(out, align, n);
        return (*out = pph_boot_alloc(n, align)) ? 0 : ENOMEM;
    }
    t->guard = 1;
    int rc = ((posix_memalign_fn)pph_real[PPH_S_POSIX_MEMALIGN])(out, align, n);
    if (rc == 0) PPH_RECORD_ALLOC(t, *out, n, PPH_FN_POSIX_MEMALIGN);
    t->guard = 0;
    return rc;
}

/* aligned_alloc, memalign: (alignment, size). */
#define ALIGNED_HOOK(name, sym, fn)                            \
    PPH_HOOK void* pph_h_##name(size_t align, size_t n) {      \
        struct pph_tls* t = &pph_t;                            \
        if (!entering(t)) {                                    \
            alloc2_fn f = (alloc2_fn)real(sym);                \
            return f ? f(align, n) : pph_boot_alloc(n, align); \
        }                                                      \
        t->guard = 1;                                          \
        void* p = ((alloc2_fn)pph_real[sym])(align, n);        \
        PPH_RECORD_ALLOC(t, p, n, fn);                         \
        t->guard = 0;                                          \
        return p;                                              \
    }
ALIGNED_HOOK(aligned_alloc, PPH_S_ALIGNED_ALLOC, PPH_FN_MEMALIGN)
ALIGNED_HOOK(memalign, PPH_S_MEMALIGN, PPH_FN_MEMALIGN)

/* valloc, pvalloc: (size), page-aligned. */
#define PAGE_HOOK(name, sym)                           \
    PPH_HOOK void* pph_h_##name(size_t n) {            \
        struct pph_tls* t = &pph_t;                    \
        if (!entering(t)) {                            \
            alloc1_fn f = (alloc1_fn)real(sym);        \
            return f ? f(n) : pph_boot_alloc(n, 4096); \
        }                                              \
        t->guard = 1;                                  \
        void* p = ((alloc1_fn)pph_real[sym])(n);       \
        PPH_RECORD_ALLOC(t, p, n, PPH_FN_VALLOC);      \
        t->guard = 0;                                  \
        return p;                                      \
    }
PAGE_HOOK(valloc, PPH_S_VALLOC)
PAGE_HOOK(pvalloc, PPH_S_PVALLOC)

/* ---- operator new and delete ----
 * The throwing forms must let std::bad_alloc (or a new_handler's exception) pass, and the guard
 * must not be left set when one does: a C frame runs no cleanup. So the recorded path asks the
 * runtime's nothrow form (which tries the throwing one and catches, with the new_handler loop),
 * guard held; only when that fails is the throwing form called again, guard released, to throw
 * through this frame (the agent has unwind tables). A program that replaced operator new binds
 * its own definition first: the hooks then never run. */

/* The nothrow form of the runtime, or the throwing one when the runtime has none. */
static void* new_nothrow(int nt, int thr, size_t n) {
    new_nt_fn f = (new_nt_fn)real(nt);
    if (f) return f(n, 0);
    alloc1_fn g = (alloc1_fn)real(thr);
    return g ? g(n) : 0;
}

/* A kept operator new: 0 when the nothrow form failed (the caller then throws). */
__attribute__((noinline)) static void* new_kept(int sym_nt, int sym, size_t n, uint64_t pc, uint64_t sp,
                                                uint64_t bp) {
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    void* p = new_nothrow(sym_nt, sym, n);
    if (p) pph_record_alloc(p, n, PPH_FN_NEW, pc, sp, bp);
    t->guard = 0;
    return p;
}

#define NEW_HOOK(name, sym, sym_nt)                                                             \
    PPH_HOOK void* pph_h_##name(size_t n) {                                                     \
        struct pph_tls* t = &pph_t;                                                             \
        if (!entering(t) || PPH_LIKELY(pph_alloc_done(t, n))) return ((alloc1_fn)real(sym))(n); \
        void* p = new_kept(sym_nt, sym, n, PPH_CALLER_ARGS);                                    \
        if (PPH_UNLIKELY(!p)) p = ((alloc1_fn)real(sym))(n); /* throws */                       \
        return p;                                                                               \
    }
NEW_HOOK(_Znwm, PPH_S_NEW, PPH_S_NEW_NT)
NEW_HOOK(_Znam, PPH_S_NEW_ARR, PPH_S_NEW_ARR_NT)

#define NEW_NT_HOOK(name, sym)                                  \
    PPH_HOOK void* pph_h_##name(size_t n, const void* nt) {     \
        struct pph_tls* t = &pph_t;                             \
        if (!entering(t)) return ((new_nt_fn)real(sym))(n, nt); \
        t->guard = 1;                                           \
        void* p = ((new_nt_fn)real(sym))(n, nt);                \
        PPH_RECORD_ALLOC(t, p, n, PPH_FN_NEW);                  \
        t->guard = 0;                                           \
        return p;                                               \
    }
NEW_NT_HOOK(_ZnwmRKSt9nothrow_t, PPH_S_NEW_NT)
NEW_NT_HOOK(_ZnamRKSt9nothrow_t, PPH_S_NEW_ARR_NT)

#define NEW_AL_HOOK(name, sym, sym_nt)                                        \
    PPH_HOOK void* pph_h_##name(size_t n, size_t al) {                        \
        struct pph_tls* t = &pph_t;                                           \
        if (!entering(t)) return ((alloc2_fn)real(sym))(n, al);               \
        t->guard = 1;                                                         \
        new_al_nt_fn f = (new_al_nt_fn)real(sym_nt);                          \
        void* p = f ? f(n, al, 0) : 0;                                        \
        PPH_RECORD_ALLOC(t, p, n, PPH_FN_NEW);                                \
        t->guard = 0;                                                         \
        if (PPH_UNLIKELY(!p)) p = ((alloc2_fn)real(sym))(n, al); /* throws */ \
        return p;                                                             \
    }
NEW_AL_HOOK(_ZnwmSt11align_val_t, PPH_S_NEW_AL, PPH_S_NEW_AL_NT)
NEW_AL_HOOK(_ZnamSt11align_val_t, PPH_S_NEW_ARR_AL, PPH_S_NEW_ARR_AL_NT)

#define NEW_AL_NT_HOOK(name, sym)                                      \
    PPH_HOOK void* pph_h_##name(size_t n, size_t al, const void* nt) { \
        struct pph_tls* t = &pph_t;                                    \
        if (!entering(t)) return ((new_al_nt_fn)real(sym))(n, al, nt); \
        t->guard = 1;                                                  \
        void* p = ((new_al_nt_fn)real(sym))(n, al, nt);                \
        PPH_RECORD_ALLOC(t, p, n, PPH_FN_NEW);                         \
        t->guard = 0;                                                  \
        return p;                                                      \
    }
NEW_AL_NT_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, PPH_S_NEW_AL_NT)
NEW_AL_NT_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, PPH_S_NEW_ARR_AL_NT)

/* The delete forms: (p), (p, size) or (p, align), (p, size, align); the nothrow ones take a
 * last argument the runtime ignores, passed on as is. */
/* A delete to record: the FREE, then the runtime's delete, guard held (it calls free). Every form
 * is called with three arguments: on x86-64 the ones a form does not take are ignored. */
__attribute__((noinline)) static void delete_kept(int sym, void* p, size_t a, size_t b) {
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    pph_record_free(p, PPH_FN_DELETE);
    ((free3_fn)real(sym))(p, a, b);
    t->guard = 0;
}

#define DEL1_HOOK(name, sym)                            \
    PPH_HOOK void pph_h_##name(void* p) {               \
        struct pph_tls* t = &pph_t;                     \
        if (p && entering(t) && !pph_free_done(t, p)) { \
            delete_kept(sym, p, 0, 0);                  \
            return;                                     \
        }                                               \
        ((free_fn)real(sym))(p);                        \
    }
#define DEL2_HOOK(name, sym)                            \
    PPH_HOOK void pph_h_##name(void* p, size_t a) {     \
        struct pph_tls* t = &pph_t;                     \
        if (p && entering(t) && !pph_free_done(t, p)) { \
            delete_kept(sym, p, a, 0);                  \
            return;                                     \
        }                                               \
        ((free2_fn)real(sym))(p, a);                    \
    }
#define DEL3_HOOK(name, sym)                                  \
    PPH_HOOK void pph_h_##name(void* p, size_t a, size_t b) { \
        struct pph_tls* t = &pph_t;                           \
        if (p && entering(t) && !pph_free_done(t, p)) {       \
            delete_kept(sym, p, a, b);                        \
            return;                                           \
        }                                                     \
        ((free3_fn)real(sym))(p, a, b);                       \
    }
DEL1_HOOK(_ZdlPv, PPH_S_DEL)
DEL1_HOOK(_ZdaPv, PPH_S_DEL_ARR)
DEL2_HOOK(_ZdlPvm, PPH_S_DEL_SZ)
DEL2_HOOK(_ZdaPvm, PPH_S_DEL_ARR_SZ)
DEL2_HOOK(_ZdlPvRKSt9nothrow_t, PPH_S_DEL_NT)
DEL2_HOOK(_ZdaPvRKSt9nothrow_t, PPH_S_DEL_ARR_NT)
DEL2_HOOK(_ZdlPvSt11align_val_t, PPH_S_DEL_AL)
DEL2_HOOK(_ZdaPvSt11align_val_t, PPH_S_DEL_ARR_AL)
DEL3_HOOK(_ZdlPvmSt11align_val_t, PPH_S_DEL_SZ_AL)
DEL3_HOOK(_ZdaPvmSt11align_val_t, PPH_S_DEL_ARR_SZ_AL)
DEL3_HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t, PPH_S_DEL_AL_NT)
DEL3_HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t, PPH_S_DEL_ARR_AL_NT)

/* ---- stand-ins for a C++ runtime dlsym cannot find (a library that brought its own, loaded
 * RTLD_LOCAL, calls operator new, and the global scope has none): the same blocks from the C
 * allocator. A throwing form cannot throw from C: it aborts where the runtime would throw. ---- */

static void* fb_new(size_t n) {
    void* p = ((alloc1_fn)real(PPH_S_MALLOC))(n ? n : 1);
    if (!p) abort();
    return p;
}
static void* fb_new_nt(size_t n, const void* nt) {
    (void)nt;
    return ((alloc1_fn)real(PPH_S_MALLOC))(n ? n : 1);
}
static void* fb_new_al_nt(size_t n, size_t al, const void* nt) {
    (void)nt;
    void* p = 0;
    return ((posix_memalign_fn)real(PPH_S_POSIX_MEMALIGN))(&p, al < sizeof(void*) ? sizeof(void*) : al,
                                                           n ? n : 1)
               ? 0
               : p;
}
static void* fb_new_al(size_t n, size_t al) {
    void* p = fb_new_al_nt(n, al, 0);
    if (!p) abort();
    return p;
}
static void fb_delete(void* p) {
    ((free_fn)real(PPH_S_FREE))(p);
}

void* pph_cxx_fallback(int s) {
    switch (s) {
        case PPH_S_NEW:
        case PPH_S_NEW_ARR:
            return (void*)fb_new;
        case PPH_S_NEW_NT:
        case PPH_S_NEW_ARR_NT:
            return (void*)fb_new_nt;
        case PPH_S_NEW_AL:
        case PPH_S_NEW_ARR_AL:
            return (void*)fb_new_al;
        case PPH_S_NEW_AL_NT:
        case PPH_S_NEW_ARR_AL_NT:
            return (void*)fb_new_al_nt;
        default:
            /* every delete form takes the block first; the other arguments are ignored */
            return s >= PPH_S_DEL && s <= PPH_S_DEL_ARR_AL_NT ? (void*)fb_delete : 0;
    }
}

/* ---- the loader ----
 * dlclose (both modes): the walker forgets the unloaded objects' rules, and (inject) the slots
 * of unloaded objects are forgotten. dlopen (inject mode only, never exported under its name:
 * with LD_PRELOAD the caller's address decides $ORIGIN and the RUNPATH searched): the objects
 * it loaded get their slots patched once it returns. */
typedef void* (*dlopen_fn)(const char*, int);
typedef int (*dlclose_fn)(void*);

PPH_HOOK int pph_h_dlclose(void* handle) {
    dlclose_fn f = (dlclose_fn)real(PPH_S_DLCLOSE);
    int rc = f ? f(handle) : -1;
    pph_unwind_invalidate();
    /* Only while on: after a detach no slot is kept, and in a forked child the table's lock may
     * have been held by a thread that does not exist there. */
    if (pph_injected && __atomic_load_n(&pph_on, __ATOMIC_ACQUIRE)) pph_got_forget_unloaded();
    return rc;
}

__attribute__((noinline)) static void* dlopen_hook(const char* file, int mode) {
    dlopen_fn f = (dlopen_fn)real(PPH_S_DLOPEN);
    if (!f) return 0;
    /* An object loaded already is found by its name, as for the caller; else the caller's own
     * search path is looked at here (see pph_caller_path). */
    void* h = file ? f(file, mode | RTLD_NOLOAD) : 0;
    if (!h) {
        char buf[4096];
        h = f(pph_caller_path(file, __builtin_return_address(0), buf, sizeof buf), mode);
    }
    if (h && __atomic_load_n(&pph_on, __ATOMIC_RELAXED)) {
        const char* why;
        struct pph_tls* t = &pph_t;
        uint32_t g = t->guard;
        t->guard = 1;
        pph_got_patch_new(&why);
        t->guard = g;
    }
    return h;
}

/* The hooks under the names they stand in for, exported. The agent itself takes their addresses
 * through the hidden pph_h_ names: a reference to `malloc` from inside the agent would bind to
 * the process's own malloc when the agent is loaded RTLD_LOCAL. */
#define PPH_ALIAS(name) \
    extern __typeof(pph_h_##name) name __attribute__((alias("pph_h_" #name), visibility("default")));
PPH_ALIAS(malloc)
PPH_ALIAS(calloc)
PPH_ALIAS(realloc)
PPH_ALIAS(reallocarray)
PPH_ALIAS(free)
PPH_ALIAS(posix_memalign)
PPH_ALIAS(aligned_alloc)
PPH_ALIAS(memalign)
PPH_ALIAS(valloc)
PPH_ALIAS(pvalloc)
PPH_ALIAS(_Znwm)
PPH_ALIAS(_Znam)
PPH_ALIAS(_ZnwmRKSt9nothrow_t)
PPH_ALIAS(_ZnamRKSt9nothrow_t)
PPH_ALIAS(_ZnwmSt11align_val_t)
PPH_ALIAS(_ZnamSt11align_val_t)
PPH_ALIAS(_ZnwmSt11align_val_tRKSt9nothrow_t)
PPH_ALIAS(_ZnamSt11align_val_tRKSt9nothrow_t)
PPH_ALIAS(_ZdlPv)
PPH_ALIAS(_ZdaPv)
PPH_ALIAS(_ZdlPvm)
PPH_ALIAS(_ZdaPvm)
PPH_ALIAS(_ZdlPvRKSt9nothrow_t)
PPH_ALIAS(_ZdaPvRKSt9nothrow_t)
PPH_ALIAS(_ZdlPvSt11align_val_t)
PPH_ALIAS(_ZdaPvSt11align_val_t)
PPH_ALIAS(_ZdlPvmSt11align_val_t)
PPH_ALIAS(_ZdaPvmSt11align_val_t)
PPH_ALIAS(_ZdlPvSt11align_val_tRKSt9nothrow_t)
PPH_ALIAS(_ZdaPvSt11align_val_tRKSt9nothrow_t)
PPH_ALIAS(dlclose)

void* const pph_hooks[PPH_S_COUNT] = {
    (void*)pph_h_malloc,
    (void*)pph_h_calloc,
    (void*)pph_h_realloc,
    (void*)pph_h_reallocarray,
    (void*)pph_h_free,
    (void*)pph_h_posix_memalign,
    (void*)pph_h_aligned_alloc,
    (void*)pph_h_memalign,
    (void*)pph_h_valloc,
    (void*)pph_h_pvalloc,
    (void*)pph_h__Znwm,
    (void*)pph_h__Znam,
    (void*)pph_h__ZnwmRKSt9nothrow_t,
    (void*)pph_h__ZnamRKSt9nothrow_t,
    (void*)pph_h__ZnwmSt11align_val_t,
    (void*)pph_h__ZnamSt11align_val_t,
    (void*)pph_h__ZnwmSt11align_val_tRKSt9nothrow_t,
    (void*)pph_h__ZnamSt11align_val_tRKSt9nothrow_t,
    (void*)pph_h__ZdlPv,
    (void*)pph_h__ZdaPv,
    (void*)pph_h__ZdlPvm,
    (void*)pph_h__ZdaPvm,
    (void*)pph_h__ZdlPvRKSt9nothrow_t,
    (void*)pph_h__ZdaPvRKSt9nothrow_t,
    (void*)pph_h__ZdlPvSt11align_val_t,
    (void*)pph_h__ZdaPvSt11align_val_t,
    (void*)pph_h__ZdlPvmSt11align_val_t,
    (void*)pph_h__ZdaPvmSt11align_val_t,
    (void*)pph_h__ZdlPvSt11align_val_tRKSt9nothrow_t,
    (void*)pph_h__ZdaPvSt11align_val_tRKSt9nothrow_t,
    (void*)dlopen_hook,
    (void*)pph_h_dlclose,
};
