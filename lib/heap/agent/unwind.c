/* The heap agent's stack walker (unwind.h): the process's objects, the rule cache and the walk.
 * The rules themselves come from the pure parser of unwind_cfi.c.
 *
 * Concurrency, without a lock of our own:
 * - The object list lives in one of two static slots. A refresh (one thread at a time, by a
 *   try-lock: a thread that finds another refreshing waits for its list a little, then walks
 *   with the list it has) rewrites the slot not in use under a sequence counter, then
 *   publishes it. A reader copies the object it needs and checks the counter did not move,
 *   else it reads again: a slot is rewritten while read, never freed, so the memory is bounded
 *   by the two slots.
 * - The rule cache is 2-way set-associative; each entry's key word holds the pc and a sequence
 *   whose odd value means "being written". A writer claims an entry by CAS (or gives up: it is
 *   a cache), a reader accepts a rule only when the key read before and after it is the same
 *   and holds its pc, so it never takes another pc's rule or a torn one.
 *
 * Memory: 256 KiB of cache and two lists of 2048 objects (96 bytes each), all static (.bss,
 * touched as used); 32 bytes of TLS per thread; under 1.5 KiB of stack. */
#define _GNU_SOURCE
#include "heap/agent/unwind.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "heap/agent/unwind_cfi.h"

/* A rule the walker makes itself for an object without .eh_frame_hdr: the frame-pointer chain,
 * taken only while rbp looks like a frame of this stack (see pph_unwind). */
enum { RULE_FP_GUESS = 0x80 };
enum { FP_WINDOW = 1 << 20 }; /* rbp is believed only below sp + 1 MiB */

/* ------------------------------------------------------------------ statistics */

struct counts {
    uint64_t walks, frames, hits, misses;
};
/* Per thread, added to the totals every FLUSH_WALKS walks: no shared line written per walk. */
static __thread struct counts tls_counts;
static struct counts total_counts;
static uint64_t total_refreshes;
enum { FLUSH_WALKS = 256 };

static void flush_counts(struct counts* c) {
    __atomic_fetch_add(&total_counts.walks, c->walks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&total_counts.frames, c->frames, __ATOMIC_RELAXED);
    __atomic_fetch_add(&total_counts.hits, c->hits, __ATOMIC_RELAXED);
    __atomic_fetch_add(&total_counts.misses, c->misses, __ATOMIC_RELAXED);
    memset(c, 0, sizeof *c);
}

void pph_unwind_stats(struct pph_unwind_stats* out) {
    /* The calling thread's counts are exact; other threads' lag by up to FLUSH_WALKS walks. */
    flush_counts(&tls_counts);
    out->walks = __atomic_load_n(&total_counts.walks, __ATOMIC_RELAXED);
    out->frames = __atomic_load_n(&total_counts.frames, __ATOMIC_RELAXED);
    out->hits = __atomic_load_n(&total_counts.hits, __ATOMIC_RELAXED);
    out->misses = __atomic_load_n(&total_counts.misses, __ATOMIC_RELAXED);
    out->refreshes = __atomic_load_n(&total_refreshes, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ the rule cache */

/* 8Ki sets of 2 entries (256 KiB): two return addresses that share a set, as the ones of a
 * hot stack may, both stay cached. */
enum { CACHE_SETS = 1 << 13, CACHE_WAYS = 2, CACHE_SIZE = CACHE_SETS * CACHE_WAYS };
/* key: pc << 16 | sequence (odd: being written); code addresses of user space fit in 48 bits.
 * The rule is written as one word and read field by field (a load that sign-extends costs no
 * more than a plain one, and the walk's chain of dependent loads is what it costs). */
struct centry {
    uint64_t key;
    union {
        uint64_t word;
        struct pph_rule r;
    } rule;
} __attribute__((aligned(16)));
static struct centry cache[CACHE_SIZE] __attribute__((aligned(64))); /* a set: one line */
/* Bumped by pph_unwind_invalidate(): a rule computed before it is not cached after it. */
static uint64_t epoch;
static unsigned victim; /* which way a full set gives up, in turn */

/* The set of the rule at code address pc: pc + 1 is the return address whose call holds pc,
 * and its low bits index the table directly (objects lie at page-aligned bases, and their code
 * spreads over more than the table covers: the low bits of return addresses are as good as a
 * hash, and cheaper on the walk's chain of dependent loads). */
static inline struct centry* set_of(uint64_t pc) {
    return &cache[((pc + 1) & (CACHE_SETS - 1)) * CACHE_WAYS];
}

/* pc's rule from entry e, field by field, when e holds it: the key read before and after it is
 * the same, even (not being written) and pc's. */
static inline int entry_get(const struct centry* e, uint64_t pc, struct pph_rule* r) {
    const uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
    r->cfa_off = __atomic_load_n(&e->rule.r.cfa_off, __ATOMIC_RELAXED);
    r->rbp_off = __atomic_load_n(&e->rule.r.rbp_off, __ATOMIC_RELAXED);
    r->ra_off = __atomic_load_n(&e->rule.r.ra_off, __ATOMIC_RELAXED);
    r->flags = __atomic_load_n(&e->rule.r.flags, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return k == (pc << 16 | (k & 0xfffe)) && __atomic_load_n(&e->key, __ATOMIC_RELAXED) == k;
}

static inline int cache_get(uint64_t pc, struct pph_rule* r) {
    const struct centry* set = set_of(pc);
    return entry_get(&set[0], pc, r) || entry_get(&set[1], pc, r);
}

static void cache_put(uint64_t pc, const struct pph_rule* r, uint64_t ep) {
    if (pc >> 48) return;
    /* pc's entry or an empty one, else either, in turn: two addresses that keep taking each
     * other's entry end up in different ones. */
    struct centry* set = set_of(pc);
    const uint64_t k0 = __atomic_load_n(&set[0].key, __ATOMIC_RELAXED) >> 16;
    const uint64_t k1 = __atomic_load_n(&set[1].key, __ATOMIC_RELAXED) >> 16;
    struct centry* e = k0 == pc || !k0   ? &set[0]
                       : k1 == pc || !k1 ? &set[1]
                                         : &set[__atomic_fetch_add(&victim, 1, __ATOMIC_RELAXED) & 1];
    uint64_t old = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
    if ((old & 1) || !__atomic_compare_exchange_n(&e->key, &old, old | 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    uint64_t v;
    memcpy(&v, r, sizeof v);
    __atomic_store_n(&e->rule.word, v, __ATOMIC_RELAXED);
    uint64_t key = pc << 16 | ((old + 2) & 0xfffe);
    __atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
    /* Objects were unloaded meanwhile: the rule may be theirs. pph_unwind_invalidate() bumps the
     * epoch before it clears the entries, so either it sees this entry or this sees its epoch. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&epoch, __ATOMIC_RELAXED) != ep)
        __atomic_compare_exchange_n(&e->key, &key, (key + 2) & 0xfffe, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Empties every entry not being written (its writer sees the new epoch and empties it). */
static void cache_clear(void) {
    for (unsigned i = 0; i < CACHE_SIZE; i++) {
        uint64_t k = __atomic_load_n(&cache[i].key, __ATOMIC_SEQ_CST);
        while (!(k & 1) && k >> 16 &&
               !__atomic_compare_exchange_n(&cache[i].key, &k, (k + 2) & 0xfffe, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
        }
    }
}

/* ------------------------------------------------------------------ the objects */

enum { MAX_OBJECTS = 2048 };
struct object {
    uint64_t lo, hi;    /* the span of its executable segments */
    struct pph_cfi cfi; /* cfi.hdr 0: no usable .eh_frame_hdr */
};
struct object_list {
    uint64_t seq;        /* odd while being rewritten */
    uint64_t adds, subs; /* dl_iterate_phdr's load and unload counts when read */
    uint64_t epoch;      /* the invalidation epoch when read */
    uint32_t n;
    struct object obj[MAX_OBJECTS]; /* sorted by lo */
};
static struct object_list lists[2];
static struct object_list* current;
static int refreshing; /* the pid of the process whose thread refreshes; 0: nobody */
enum { REFRESH_WAIT = 1 << 14 }; /* pause instructions: a millisecond or two at most */

/* The segment (PT_LOAD, readable) of `info` holding address `addr`, as readable bytes. */
static int segment_of(const struct dl_phdr_info* info, uint64_t addr, struct pph_mem* out) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        const uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || addr < lo || addr - lo >= ph->p_memsz) continue;
        out->bytes = (const uint8_t*)(uintptr_t)lo;
        out->addr = lo;
        out->len = ph->p_memsz;
        return 1;
    }
    return 0;
}

static int fill_one(struct dl_phdr_info* info, size_t size, void* arg) {
    struct object_list* l = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        l->adds = info->dlpi_adds;
        l->subs = info->dlpi_subs;
    }
    if (l->n == MAX_OBJECTS) return 0; /* the objects past it: their addresses end walks */
    struct object* o = &l->obj[l->n];
    o->lo = UINT64_MAX;
    o->hi = 0;
    uint64_t hdr = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        const uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz) {
            if (lo < o->lo) o->lo = lo;
            if (lo + ph->p_memsz > o->hi) o->hi = lo + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            hdr = lo;
        }
    }
    if (o->lo >= o->hi) return 0; /* no code */
    memset(&o->cfi, 0, sizeof o->cfi);
    struct pph_mem seg;
    if (hdr && segment_of(info, hdr, &seg) && pph_cfi_parse_hdr(&seg, hdr, &o->cfi) == PPH_CFI_OK &&
        segment_of(info, o->cfi.eh_frame, &o->cfi.eh_seg)) {
        /* usable */
    } else {
        memset(&o->cfi, 0, sizeof o->cfi);
    }
    l->n++;
    return 0;
}

/* Shell sort by address (Ciura's gaps): the loader maps objects from high addresses down, the
 * worst order for an insertion sort. */
static void sort_objects(struct object_list* l) {
    static const uint32_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (unsigned g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        const uint32_t gap = gaps[g];
        for (uint32_t i = gap; i < l->n; i++) {
            const struct object o = l->obj[i];
            uint32_t j = i;
            for (; j >= gap && l->obj[j - gap].lo > o.lo; j -= gap) l->obj[j] = l->obj[j - gap];
            l->obj[j] = o;
        }
    }
}

struct load_counts {
    uint64_t adds, subs;
};

static int read_counts(struct dl_phdr_info* info, size_t size, void* arg) {
    struct load_counts* c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 1; /* the counts are in every entry: one is enough */
}

/* Reads the loaded objects anew when they changed since the current list (or it is stale, or
 * there is none). Returns whether a new list was published (by this thread or by one it
 * waited for). */
static int refresh(void) {
    struct object_list* cur = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    const int me = getpid();
    int holder = 0;
    /* Held by another process's thread: the parent's, refreshing when this process forked,
     * which will never release it here. */
    if (!__atomic_compare_exchange_n(&refreshing, &holder, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) &&
        (holder == me ||
         !__atomic_compare_exchange_n(&refreshing, &holder, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))) {
        /* Another thread reads the objects (tens of microseconds): its list is awaited,
         * never for long (it could be this very thread, interrupted by a signal). */
        for (int i = 0; i < REFRESH_WAIT && __atomic_load_n(&refreshing, __ATOMIC_ACQUIRE); i++)
            __builtin_ia32_pause();
        return __atomic_load_n(&current, __ATOMIC_ACQUIRE) != cur;
    }
    cur = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    uint64_t ep = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    struct load_counts k = {0, 0};
    dl_iterate_phdr(read_counts, &k);
    int published = 0;
    if (!cur || cur->epoch != ep || cur->adds != k.adds || cur->subs != k.subs) {
        /* Objects were unloaded: their rules must go (a later object may take their addresses),
         * as pph_unwind_invalidate() does it: the epoch first, then the entries. */
        const int unloaded = cur && cur->subs != k.subs;
        if (unloaded) ep = __atomic_add_fetch(&epoch, 1, __ATOMIC_SEQ_CST);
        struct object_list* l = cur == &lists[0] ? &lists[1] : &lists[0];
        /* Odd while written (already odd if a fork cut the parent's write short). */
        const uint64_t seq = l->seq | 1;
        __atomic_store_n(&l->seq, seq, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        l->n = 0;
        l->epoch = ep;
        dl_iterate_phdr(fill_one, l); /* sets adds and subs too, as they are during this read */
        sort_objects(l);
        __atomic_store_n(&l->seq, seq + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&current, l, __ATOMIC_RELEASE);
        if (unloaded) cache_clear();
        __atomic_fetch_add(&total_refreshes, 1, __ATOMIC_RELAXED);
        published = 1;
    }
    __atomic_store_n(&refreshing, 0, __ATOMIC_RELEASE);
    return published;
}

/* The object holding code address pc, copied: 1; 0 when none does, or the list kept changing. */
static int find_object(uint64_t pc, struct object* out) {
    for (int tries = 0; tries < 4; tries++) {
        struct object_list* l = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
        if (!l) return 0;
        const uint64_t seq = __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
        if (seq & 1) continue;
        uint32_t n = __atomic_load_n(&l->n, __ATOMIC_RELAXED);
        if (n > MAX_OBJECTS) n = MAX_OBJECTS; /* a torn read must not index past the slot */
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            if (l->obj[mid].lo <= pc)
                lo = mid + 1;
            else
                hi = mid;
        }
        const int found = lo > 0 && pc < l->obj[lo - 1].hi;
        if (found) memcpy(out, &l->obj[lo - 1], sizeof *out);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&l->seq, __ATOMIC_RELAXED) == seq) return found;
    }
    return 0;
}

/* A "stop" rule cached for an address in no object has ra_off STOP_NO_OBJECT, in rbp_off the
 * load count (dlpi_adds) of the object list it was looked up in and in cfa_off the time (the
 * TSC / 2^20, about a third of a millisecond): it holds until a list with more objects is
 * published, or for NO_OBJECT_TICKS (a library loaded where such an address was, as a dlclose
 * then a dlopen may do, is found again after that, or at once after pph_unwind_invalidate()). */
enum { STOP_NO_OBJECT = 1, NO_OBJECT_TICKS = 16 };

static inline uint32_t ticks(void) {
    return (uint32_t)(__builtin_ia32_rdtsc() >> 20);
}

/* A cached "stop" at the kernel's signal trampoline (rt_sigreturn), whose frame the walk reads
 * itself: ra_off STOP_SIGRETURN. */
enum { STOP_SIGRETURN = 2 };

/* Whether the code at addr, inside object o, is the x86-64 rt_sigreturn trampoline glibc and the
 * kernel's vDSO use: mov $15, %rax; syscall (as libgcc recognizes it). */
static int is_sigreturn(const struct object* o, uint64_t addr) {
    static const uint8_t code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    return addr >= o->lo && addr < o->hi && o->hi - addr >= sizeof code &&
           memcmp((const void*)(uintptr_t)addr, code, sizeof code) == 0;
}

static uint16_t list_adds(void) {
    const struct object_list* l = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    return l ? (uint16_t)l->adds : 0;
}

static int stale_no_object(const struct pph_rule* r) {
    return (r->flags & PPH_RULE_STOP) && r->ra_off == STOP_NO_OBJECT &&
           ((uint16_t)r->rbp_off != list_adds() || ticks() - (uint32_t)r->cfa_off > NO_OBJECT_TICKS);
}

/* The rule at pc: from the cache, else from the object's CFI (then cached, "stop here" too),
 * as one word (struct pph_rule's bytes); 0 where pc lies in no object (not cached: a refresh
 * may find it later). */
static __attribute__((noinline)) uint64_t rule_slow(uint64_t pc) {
    struct pph_rule rule, *r = &rule;
    uint64_t v;
    if (pc < 4096 || pc >> 48) return 0; /* nothing is mapped there (and key 0 is an empty entry) */
    if (cache_get(pc, r) && !stale_no_object(r)) goto found;
    /* The epoch is read before the object is looked up (a refresh may bump it): a rule from a
     * list older than an invalidation is not cached (cache_put). */
    uint64_t ep = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    struct object o;
    const struct object_list* l = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if (!l || l->epoch != ep) {
        refresh();
        ep = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    }
    int found = find_object(pc, &o);
    if (!found && refresh()) {
        ep = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
        found = find_object(pc, &o);
    }
    if (!found) {
        /* In no object (JIT code, a stray value): cached too, so that the next walk reaching it
         * does not ask the loader again while the list stays the same. */
        *r = (struct pph_rule){.cfa_off = (int32_t)ticks(), .rbp_off = (int16_t)list_adds(),
                               .ra_off = STOP_NO_OBJECT, .flags = PPH_RULE_VALID | PPH_RULE_STOP};
    } else if (!o.cfi.hdr) {
        /* No search table: the frame-pointer chain's rule, believed only where rbp looks sane. */
        *r = (struct pph_rule){.cfa_off = 16,
                               .rbp_off = -16,
                               .ra_off = -8,
                               .flags = PPH_RULE_VALID | PPH_RULE_CFA_RBP | PPH_RULE_RBP_SAVED | RULE_FP_GUESS};
    } else if (memset(r, 0, sizeof *r), pph_cfi_find(&o.cfi, pc, r) != PPH_CFI_OK) {
        /* The signal trampoline's CFI is an expression: its frame is read as the kernel wrote it. */
        const int sigreturn = (r->flags & PPH_RULE_SIGNAL) && is_sigreturn(&o, pc + 1);
        *r = (struct pph_rule){.ra_off = sigreturn ? STOP_SIGRETURN : 0,
                               .flags = PPH_RULE_VALID | PPH_RULE_STOP | (sigreturn ? PPH_RULE_SIGNAL : 0)};
    } else if (!(r->flags & (PPH_RULE_CFA_RBP | PPH_RULE_OUTERMOST))) {
        /* An rsp-based rule is checked here once, so that the walk needs no check: the CFA lies
         * above sp, the saved words between sp and the CFA. */
        if (r->cfa_off < 8 || r->ra_off > -8 || r->cfa_off + r->ra_off < 0)
            r->flags = PPH_RULE_VALID | PPH_RULE_STOP;
        else if ((r->flags & PPH_RULE_RBP_SAVED) && (r->rbp_off > -8 || r->cfa_off + r->rbp_off < 0))
            r->flags = (uint8_t)((r->flags & ~PPH_RULE_RBP_SAVED) | PPH_RULE_RBP_LOST);
    }
    cache_put(pc, r, ep);
found:
    memcpy(&v, r, sizeof v);
    return v;
}

void pph_unwind_invalidate(void) {
    __atomic_fetch_add(&epoch, 1, __ATOMIC_SEQ_CST);
    cache_clear();
}

/* ------------------------------------------------------------------ the walk */

/* The walk; `sps` (when not 0) gets each frame's stack pointer beside its pc. Inlined into both
 * entries, so that the plain walk does not test `sps` per frame. */
static inline __attribute__((always_inline)) int walk(struct pph_frame start, uint64_t* out, uint64_t* sps,
                                                      int max) {
    if (max <= 0) return 0;
    if (start.sp < 4096) max = 1; /* no stack to read */
    uint64_t ra = start.pc, sp = start.sp, bp = start.bp;
    int bp_known = 1, after_signal = 0, rechecks = 0, cached;
    int n = 0;
    uint64_t hits = 0, misses = 0;
    if (sps) sps[n] = sp;
    out[n++] = ra;
    while (n < max) {
        /* A return address's call lies before it: its rule is looked up inside the call. An
         * interrupted pc (the frame above a signal trampoline) is itself the instruction. The
         * cached rule is read in place, in registers (cache_get's protocol). */
        const struct centry* e = &cache[(ra & (CACHE_SETS - 1)) * CACHE_WAYS];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k >> 16 != ra - 1) k = __atomic_load_n(&(++e)->key, __ATOMIC_ACQUIRE); /* the other way */
        int64_t cfa_off = __atomic_load_n(&e->rule.r.cfa_off, __ATOMIC_RELAXED);
        int64_t rbp_off = __atomic_load_n(&e->rule.r.rbp_off, __ATOMIC_RELAXED);
        int64_t ra_off = __atomic_load_n(&e->rule.r.ra_off, __ATOMIC_RELAXED);
        unsigned flags = __atomic_load_n(&e->rule.r.flags, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__builtin_expect(
                after_signal || k != ((ra - 1) << 16 | (k & 0xfffe)) || __atomic_load_n(&e->key, __ATOMIC_RELAXED) != k,
                0)) {
        slow:
            cached = 0;
            misses++;
            const uint64_t v = rule_slow(ra - !after_signal);
            if (!v) break;
            cfa_off = (int32_t)(uint32_t)v;
            rbp_off = (int16_t)(uint16_t)(v >> 32);
            ra_off = (int8_t)(uint8_t)(v >> 48);
            flags = (unsigned)(v >> 56);
        } else {
            cached = 1;
            hits++;
        }
        uint64_t cfa;
        if (__builtin_expect(!(flags & (PPH_RULE_CFA_RBP | PPH_RULE_STOP | PPH_RULE_OUTERMOST)), 1)) {
            cfa = sp + (uint64_t)cfa_off; /* rsp-based: checked once when cached (rule_slow) */
        } else {
            if (flags & PPH_RULE_STOP) {
                if (ra_off == STOP_SIGRETURN) {
                    /* The handler returned into the trampoline: sp is at the ucontext the kernel
                     * saved the interrupted registers in. Their pc is no return address. */
                    const ucontext_t* uc = (const ucontext_t*)sp;
                    const uint64_t new_sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
                    if (new_sp <= sp) break; /* on another stack (sigaltstack) below this one */
                    ra = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
                    bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
                    bp_known = 1;
                    sp = new_sp;
                    if (ra - 1 >= (1ull << 48) - 1) break;
                    if (sps) sps[n] = sp;
                    out[n++] = ra;
                    after_signal = 1;
                    continue;
                }
                /* An address in no object, cached before the objects last changed: again. */
                const struct pph_rule r = {(int32_t)cfa_off, (int16_t)rbp_off, (int8_t)ra_off, (uint8_t)flags};
                if (!stale_no_object(&r) || rechecks++ == 4) break;
                hits -= cached; /* a miss after all, counted as one below */
                goto slow;
            }
            if (flags & PPH_RULE_OUTERMOST || !bp_known) break;
            if ((flags & RULE_FP_GUESS) && ((bp & 7) || bp <= sp || bp - sp >= FP_WINDOW)) break;
            cfa = bp + (uint64_t)cfa_off;
            /* The caller's frame lies above this one; the saved words between the two sps. */
            if (cfa <= sp || cfa + (uint64_t)ra_off < sp || cfa + (uint64_t)ra_off > cfa - 8) break;
            if ((flags & PPH_RULE_RBP_SAVED) && (cfa + (uint64_t)rbp_off < sp || cfa + (uint64_t)rbp_off > cfa - 8))
                break;
        }
        ra = *(const uint64_t*)(cfa + (uint64_t)ra_off);
        if (flags & PPH_RULE_RBP_SAVED)
            bp = *(const uint64_t*)(cfa + (uint64_t)rbp_off);
        else if (flags & PPH_RULE_RBP_LOST)
            bp_known = 0;
        sp = cfa;
        /* 0 ends the chain; above 2^48 is no user code address (nor a cache key). */
        if (ra - 1 >= (1ull << 48) - 1) break;
        if (sps) sps[n] = sp;
        out[n++] = ra;
        after_signal = flags & PPH_RULE_SIGNAL;
    }
    struct counts* c = &tls_counts;
    c->frames += (uint64_t)n;
    c->misses += misses;
    c->hits += hits;
    if (++c->walks >= FLUSH_WALKS) flush_counts(c);
    return n;
}

int pph_unwind(struct pph_frame start, uint64_t* out, int max) {
    return walk(start, out, 0, max);
}

int pph_unwind_sp(struct pph_frame start, uint64_t* out, uint64_t* sps, int max) {
    return walk(start, out, sps, max);
}
