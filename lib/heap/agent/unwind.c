/* The heap agent's stack walker (unwind.h): the process's objects, the rule cache and the walk.
 * The rules themselves come from the pure parser of unwind_cfi.c.
 *
 * Concurrency, without a lock of our own:
 * - The object list lives in one of two static slots. A refresh (one thread at a time, by a
 *   try-lock: a thread that finds another refreshing walks with the list it has) rewrites the
 *   slot not in use under a sequence counter, then publishes it. A reader copies the object it
 *   needs and checks the counter did not move, else it reads again: a slot is rewritten while
 *   read, never freed, so the memory is bounded by the two slots.
 * - The rule cache is direct-mapped; each entry's key word holds the pc and a sequence whose
 *   odd value means "being written". A writer claims an entry by CAS (or gives up: it is a
 *   cache), a reader accepts a rule only when the key read before and after it is the same and
 *   holds its pc, so it never takes another pc's rule or a torn one. */
#define _GNU_SOURCE
#include "heap/agent/unwind.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

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

enum { CACHE_BITS = 14, CACHE_SIZE = 1 << CACHE_BITS };
/* key: pc << 16 | sequence (odd: being written). Code addresses of user space fit in 48 bits. */
struct centry {
    uint64_t key, rule;
} __attribute__((aligned(16)));
static struct centry cache[CACHE_SIZE];
/* Bumped by pph_unwind_invalidate(): a rule computed before it is not cached after it. */
static uint64_t epoch;

static inline struct centry* centry_of(uint64_t pc) {
    return &cache[(pc * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS)];
}

static inline int cache_get(uint64_t pc, struct pph_rule* r) {
    struct centry* e = centry_of(pc);
    const uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
    if (k >> 16 != pc || (k & 1)) return 0;
    const uint64_t v = __atomic_load_n(&e->rule, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&e->key, __ATOMIC_RELAXED) != k) return 0;
    memcpy(r, &v, sizeof v);
    return (r->flags & PPH_RULE_VALID) != 0;
}

static void cache_put(uint64_t pc, const struct pph_rule* r, uint64_t ep) {
    if (pc >> 48) return;
    struct centry* e = centry_of(pc);
    uint64_t old = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
    if ((old & 1) || !__atomic_compare_exchange_n(&e->key, &old, old | 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    uint64_t v;
    memcpy(&v, r, sizeof v);
    __atomic_store_n(&e->rule, v, __ATOMIC_RELAXED);
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
static int refreshing;
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
    (void)size;
    struct object_list* l = arg;
    if (l->n == MAX_OBJECTS) return 0;
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
    if (__atomic_exchange_n(&refreshing, 1, __ATOMIC_ACQUIRE)) {
        /* Another thread reads the objects (tens of microseconds): its list is awaited,
         * never for long (it could be this very thread, interrupted by a signal). */
        for (int i = 0; i < REFRESH_WAIT && __atomic_load_n(&refreshing, __ATOMIC_ACQUIRE); i++)
            __builtin_ia32_pause();
        return __atomic_load_n(&current, __ATOMIC_ACQUIRE) != cur;
    }
    cur = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    const uint64_t ep = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    struct load_counts k = {0, 0};
    dl_iterate_phdr(read_counts, &k);
    int published = 0;
    if (!cur || cur->epoch != ep || cur->adds != k.adds || cur->subs != k.subs) {
        struct object_list* l = cur == &lists[0] ? &lists[1] : &lists[0];
        __atomic_store_n(&l->seq, l->seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        l->n = 0;
        l->adds = k.adds;
        l->subs = k.subs;
        l->epoch = ep;
        dl_iterate_phdr(fill_one, l);
        /* Insertion sort by address: objects come mostly in load order, a few hundred at most. */
        for (uint32_t i = 1; i < l->n; i++) {
            const struct object o = l->obj[i];
            uint32_t j = i;
            for (; j > 0 && l->obj[j - 1].lo > o.lo; j--) l->obj[j] = l->obj[j - 1];
            l->obj[j] = o;
        }
        /* Objects were unloaded: their rules must go (a later object may take their addresses). */
        if (cur && cur->subs != k.subs) cache_clear();
        __atomic_store_n(&l->seq, l->seq + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&current, l, __ATOMIC_RELEASE);
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

/* The rule at pc: from the cache, else from the object's CFI (then cached, "stop here" too). */
static int rule_at(uint64_t pc, struct pph_rule* r, struct counts* c) {
    if (pc < 4096) return 0; /* nothing is mapped there (and key 0 is an empty entry) */
    if (cache_get(pc, r)) {
        c->hits++;
        return 1;
    }
    c->misses++;
    const uint64_t ep = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
    struct object o;
    const struct object_list* l = __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if (!l || l->epoch != ep) refresh();
    if (!find_object(pc, &o) && !(refresh() && find_object(pc, &o))) return 0;
    if (!o.cfi.hdr) {
        /* No search table: the frame-pointer chain's rule, believed only where rbp looks sane. */
        *r = (struct pph_rule){.cfa_off = 16,
                               .rbp_off = -16,
                               .ra_off = -8,
                               .flags = PPH_RULE_VALID | PPH_RULE_CFA_RBP | PPH_RULE_RBP_SAVED | RULE_FP_GUESS};
    } else if (pph_cfi_find(&o.cfi, pc, r) != PPH_CFI_OK) {
        *r = (struct pph_rule){.flags = PPH_RULE_VALID | PPH_RULE_STOP};
    }
    cache_put(pc, r, ep);
    return 1;
}

void pph_unwind_invalidate(void) {
    __atomic_fetch_add(&epoch, 1, __ATOMIC_SEQ_CST);
    cache_clear();
}

/* ------------------------------------------------------------------ the walk */

int pph_unwind(struct pph_frame start, uint64_t* out, int max) {
    if (max <= 0) return 0;
    struct counts* c = &tls_counts;
    uint64_t pc = start.pc, sp = start.sp, bp = start.bp;
    int bp_known = 1;
    int n = 0;
    out[n++] = pc;
    /* A return address's call lies before it: its rule is looked up inside the call. An
     * interrupted pc (the frame above a signal trampoline) is itself the instruction. */
    uint64_t at = pc - 1;
    while (n < max) {
        struct pph_rule r;
        if (!rule_at(at, &r, c) || (r.flags & (PPH_RULE_STOP | PPH_RULE_OUTERMOST))) break;
        uint64_t base = sp;
        if (r.flags & PPH_RULE_CFA_RBP) {
            if (!bp_known) break;
            if ((r.flags & RULE_FP_GUESS) && ((bp & 7) || bp <= sp || bp - sp >= FP_WINDOW)) break;
            base = bp;
        }
        const uint64_t cfa = base + (uint64_t)(int64_t)r.cfa_off;
        /* The caller's frame lies above this one; the saved words lie between the two sps. */
        if (cfa <= sp) break;
        const uint64_t ra_at = cfa + (uint64_t)(int64_t)r.ra_off;
        if (ra_at < sp || ra_at > cfa - 8) break;
        const uint64_t ra = *(const uint64_t*)ra_at;
        if (r.flags & PPH_RULE_RBP_SAVED) {
            const uint64_t bp_at = cfa + (uint64_t)(int64_t)r.rbp_off;
            if (bp_at < sp || bp_at > cfa - 8) break;
            bp = *(const uint64_t*)bp_at;
        } else if (r.flags & PPH_RULE_RBP_LOST) {
            bp_known = 0;
        }
        sp = cfa;
        if (ra == 0) break;
        out[n++] = ra;
        at = (r.flags & PPH_RULE_SIGNAL) ? ra : ra - 1;
    }
    c->frames += (uint64_t)n;
    if (++c->walks >= FLUSH_WALKS) flush_counts(c);
    return n;
}
