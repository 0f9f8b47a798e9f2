/* perf-prof-heap.so: the heap agent's life. It attaches to the channel perf-prof created
 * (wire.h), either from its constructor (LD_PRELOAD, the channel's path in PPH_ENV) or when the
 * injector calls perfprof_heap_attach(path) (dlopen'd RTLD_LOCAL into a running process: the
 * objects' GOT slots are patched, got.c). It turns itself off when perf-prof asks (detach),
 * when perf-prof's heartbeat stops, and for good in a forked child; injected, it may be attached
 * again afterwards, to a new channel. At exit, with PPH_F_EXIT_SCAN, it waits (bounded) for
 * perf-prof's leak scan.
 *
 * Memory the agent leaves in the process after it is off: the channel mapping until the next
 * attach, if any, unmaps it (perf-prof may still read its records and stacks, and a hook that
 * saw the agent on just before the switch may still write one record: unmapping it under that
 * thread would crash the program), the sampled set (8 MiB reserved, 256 KiB filter; touched
 * pages only), the saved-slot table, the agent's own object (loaded with -z nodelete: a program
 * may hold a hook's address, taken while the slots were patched), its TLS block, one pthread key
 * and one pthread_atfork handler; all of it idle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "heap/agent/agent.h"
#include "heap/agent/record.h"

int pph_on;
int pph_injected;
void* pph_real[PPH_S_COUNT];
__thread struct pph_tls pph_t __attribute__((tls_model("initial-exec")));

static int g_dead;        /* a forked child or an exec'd descendant: never records */
static size_t g_map_size; /* of the channel mapped at pph_rs.h */
uint32_t pph_gen;         /* attach sessions: a thread's batched counts of an older one are dropped */

/* ---- the bootstrap arena: allocations made while dlsym resolves the real functions
 * (preload). Never freed, never reused, zeroed (calloc may use it as is). Each block has its
 * size in the 8 bytes before it. ---- */

_Alignas(4096) unsigned char pph_boot[PPH_BOOT_SIZE];
static size_t g_boot_used;

void* pph_boot_alloc(size_t size, size_t align) {
    if (align < 16) align = 16;
    if (align & (align - 1) || align > 4096 || size > PPH_BOOT_SIZE) return 0;
    size_t used = __atomic_load_n(&g_boot_used, __ATOMIC_RELAXED), at;
    do {
        at = (used + 8 + align - 1) & ~(align - 1);
        if (at + size > PPH_BOOT_SIZE) return 0;
    } while (
        !__atomic_compare_exchange_n(&g_boot_used, &used, at + size, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    *(size_t*)(pph_boot + at - 8) = size;
    return pph_boot + at;
}

size_t pph_boot_size(const void* p) {
    return *(const size_t*)((const unsigned char*)p - 8);
}

/* ---- the real functions ---- */

void* pph_resolve(int s) {
    struct pph_tls* t = &pph_t;
    if (t->guard & 2) return pph_cxx_fallback(s); /* nested inside dlsym: C calls take the arena */
    const uint32_t g = t->guard;
    t->guard = g | 2;
    void* f;
    if (pph_injected) {
        /* The process's own definition; dlsym's answer may be an executable's PLT entry. */
        f = pph_scope_lookup(pph_sym_names[s]);
        if (!f) f = dlsym(RTLD_DEFAULT, pph_sym_names[s]);
    } else {
        f = dlsym(RTLD_NEXT, pph_sym_names[s]);
    }
    if (f == pph_hooks[s]) f = 0; /* never ourselves */
    if (!f) (void)dlerror();      /* the program's next dlerror() must not see our lookup */
    if (f) __atomic_store_n(&pph_real[s], f, __ATOMIC_RELAXED);
    t->guard = g;
    /* Not kept: a runtime loaded later may still be found. */
    return f ? f : pph_cxx_fallback(s);
}

/* ---- the channel ---- */

static void set_error(struct pph_header* h, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->error, sizeof h->error, fmt, ap);
    va_end(ap);
    __atomic_store_n(&h->state, PPH_STATE_FAILED, __ATOMIC_RELEASE);
}

static int pow2(uint64_t x) {
    return x && !(x & (x - 1));
}

/* Whether [off, off + n * unit) lies within the mapping and after the header page. */
static int inside(uint64_t off, uint64_t n, uint64_t unit, uint64_t size) {
    return off >= PPH_HEADER_SIZE && off <= size && n <= (size - off) / unit && off % 8 == 0;
}

/* Checks the layout perf-prof wrote; a reason, or 0. */
static const char* check_layout(const struct pph_header* h, uint64_t size) {
    if (h->map_size != size) return "channel size differs from the file's";
    if (h->mode != PPH_FULL && h->mode != PPH_SAMPLED) return "unknown mode";
    if (h->max_frames > PPH_MAX_FRAMES) return "max_frames too large";
    if (!inside(h->gaps_off, PPH_GAPS, 8, size)) return "sampling gaps out of the mapping";
    if (!pow2(h->ring_slots) || !inside(h->ring_off, h->ring_slots, sizeof(struct pph_rec), size))
        return "ring out of the mapping";
    if (!pow2(h->stack_slots) || h->stack_slots > (1ull << 31) ||
        !inside(h->stacks_off, h->stack_slots, sizeof(struct pph_stack), size))
        return "stack table out of the mapping";
    if (h->pool_words > (1ull << 32) || !inside(h->pool_off, h->pool_words, 8, size))
        return "frame pool out of the mapping";
    if (h->mode == PPH_SAMPLED && !h->rate) return "sampled mode without a rate";
    return 0;
}

/* The agent's writable segments (.data, .bss: the arena included): ranges of the leak scan's
 * exclusion list. */
static int own_segments(struct dl_phdr_info* info, size_t size, void* arg) {
    (void)size;
    struct pph_header* h = arg;
    const ElfW(Addr) self = (ElfW(Addr)) & own_segments;
    int ours = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        const ElfW(Addr) a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && self >= a && self < a + ph->p_memsz) ours = 1;
    }
    if (!ours) return 0;
    int k = 3;
    for (int i = 0; i < info->dlpi_phnum && k < PPH_RANGES; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W)) continue;
        h->agent_ranges[k].start = info->dlpi_addr + ph->p_vaddr;
        h->agent_ranges[k].end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        k++;
    }
    return 1;
}

/* A forked child records nothing: the agent passes everything through there. */
static void on_fork_child(void) {
    __atomic_store_n(&pph_on, 0, __ATOMIC_RELAXED);
    g_dead = 1;
}

/* A leak check (full mode, exit scan): the stack of a thread that ends is dead below this frame,
 * but glibc keeps it for the next thread (zeroing all but the 16 KiB below its last frame), and
 * the leak scan would take the pointers left there as roots: valgrind, which makes a stack's
 * memory unaddressable as it shrinks, does not. So the agent zeroes that part (the stack's
 * bounds from pthread_getattr_np, whose own malloc passes through the guard). */
static void scrub_dead_stack(struct pph_tls* t) {
    const struct pph_header* h = pph_rs.h;
    if (!h || h->mode != PPH_FULL || !(h->flags & PPH_F_EXIT_SCAN)) return;
    pthread_attr_t a;
    t->guard = 1;
    const int got = pthread_getattr_np(pthread_self(), &a);
    void* low = 0;
    size_t size = 0;
    if (!got) {
        pthread_attr_getstack(&a, &low, &size);
        pthread_attr_destroy(&a);
    }
    t->guard = 0;
    const uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    const uintptr_t lo = (uintptr_t)low, end = sp - 512; /* this call's own frames stay */
    if (got || !size || sp <= lo + 512 || sp > lo + size) return;
    const uintptr_t from = end - lo > 65536 ? end - 65536 : lo; /* glibc zeroes the rest */
    memset((void*)from, 0, end - from);
}

static void flush_at_thread_exit(void* v) {
    (void)v;
    pph_flush_counts(&pph_t);
    scrub_dead_stack(&pph_t);
}

/* Maps the channel and starts recording. 0; or -1 (with the header's error set when it could be
 * mapped and is ours). */
static int attach(const char* path) {
    if (g_dead || __atomic_load_n(&pph_on, __ATOMIC_ACQUIRE)) return -1;
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < (off_t)PPH_HEADER_SIZE) {
        close(fd);
        return -1;
    }
    const uint64_t size = (uint64_t)st.st_size;
    void* m = mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return -1;
    struct pph_header* h = m;
    /* Another process's channel (an exec'd descendant that inherited the environment). */
    if (h->magic == PPH_MAGIC && h->target_pid != getpid()) {
        munmap(m, size);
        g_dead = 1;
        return -1;
    }
    if (h->magic != PPH_MAGIC || h->version != PPH_VERSION) {
        set_error(h, "perf-prof-heap.so: channel magic/version %#x/%u, expected %#x/%u", h->magic, h->version,
                  PPH_MAGIC, PPH_VERSION);
        munmap(m, size);
        return -1;
    }
    if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != PPH_STATE_NONE) {
        munmap(m, size);
        return -1; /* attached already (by another agent, or before a failure) */
    }
    const char* why = check_layout(h, size);
    if (why) {
        set_error(h, "perf-prof-heap.so: %s", why);
        munmap(m, size);
        return -1;
    }
    /* A session after a detach (serve attaches again on demand): the previous channel goes. The
     * last hook that saw it on has long returned. */
    if (pph_rs.h) munmap(pph_rs.h, g_map_size);
    __atomic_fetch_add(&pph_gen, 1, __ATOMIC_RELAXED);
    g_map_size = size;
    pph_rs.h = h;
    pph_rs.ring = (struct pph_rec*)((char*)m + h->ring_off);
    pph_rs.stacks = (struct pph_stack*)((char*)m + h->stacks_off);
    pph_rs.pool = (uint64_t*)((char*)m + h->pool_off);
    pph_rs.gaps = (const uint64_t*)((char*)m + h->gaps_off);
    pph_rs.stack_slots = h->stack_slots;
    pph_rs.pool_words = h->pool_words;
    pph_rs.mode = h->mode;
    pph_rs.max_frames = h->max_frames;
    if (h->mode == PPH_SAMPLED && pph_set_init() < 0) { /* created once, emptied at each attach */
        set_error(h, "perf-prof-heap.so: no memory for the sampled set: %s", strerror(errno));
        return -1;
    }
    for (int s = 0; s < PPH_S_COUNT; s++)
        if (!pph_real[s]) pph_resolve(s);
    for (int s = 0; s <= PPH_S_PVALLOC; s++) {
        if (!pph_real[s]) {
            set_error(h, "perf-prof-heap.so: no %s in the process", pph_sym_names[s]);
            return -1;
        }
    }
    static int once;
    if (!once) {
        once = 1;
        pph_rs.key_ok = pthread_key_create(&pph_rs.key, flush_at_thread_exit) == 0;
        pthread_atfork(0, 0, on_fork_child);
    }
    h->agent_ranges[0].start = (uint64_t)(uintptr_t)m;
    h->agent_ranges[0].end = (uint64_t)(uintptr_t)m + size;
    if (pph_rs.set) {
        h->agent_ranges[1].start = (uint64_t)(uintptr_t)pph_rs.set;
        h->agent_ranges[1].end = (uint64_t)(uintptr_t)pph_rs.set + pph_rs.set_bytes;
        h->agent_ranges[2].start = (uint64_t)(uintptr_t)pph_rs.filter;
        h->agent_ranges[2].end = (uint64_t)(uintptr_t)pph_rs.filter + pph_rs.filter_bytes;
    }
    dl_iterate_phdr(own_segments, h);
    h->agent_pid = (uint32_t)getpid();
    __atomic_store_n(&pph_on, 1, __ATOMIC_RELEASE);
    if (pph_injected && pph_got_patch_new(&why) < 0) {
        __atomic_store_n(&pph_on, 0, __ATOMIC_RELEASE);
        pph_got_restore();
        set_error(h, "perf-prof-heap.so: %s", why);
        return -1;
    }
    if (pph_injected) {
        /* The first range after the agent's segments. */
        int k = 3;
        while (k < PPH_RANGES && h->agent_ranges[k].start) k++;
        if (k < PPH_RANGES) pph_got_tables(&h->agent_ranges[k].start, &h->agent_ranges[k].end);
    }
    __atomic_store_n(&h->state, PPH_STATE_RECORDING, __ATOMIC_RELEASE);
    return 0;
}

/* Off: hooks pass through from now on (until an attach again); injected, the slots are restored. */
static void turn_off(void) {
    if (!__atomic_exchange_n(&pph_on, 0, __ATOMIC_ACQ_REL)) return;
    if (pph_injected) pph_got_restore();
    pph_flush_counts(&pph_t);
    if (pph_rs.h) __atomic_store_n(&pph_rs.h->state, PPH_STATE_OFF, __ATOMIC_RELEASE);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether perf-prof is gone: its heartbeat is older than the time-out. */
static int profiler_gone(const struct pph_header* h) {
    const uint64_t hb = __atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE), now = now_ns();
    return now > hb && now - hb > PPH_HEARTBEAT_TIMEOUT_NS;
}

void pph_check_live(void) {
    struct pph_tls* t = &pph_t;
    struct pph_header* h = pph_rs.h;
    t->tick = 0;
    if (pph_rs.mode == PPH_SAMPLED) pph_flush_counts(t);
    if (__atomic_load_n(&h->detach, __ATOMIC_ACQUIRE) || profiler_gone(h)) turn_off();
}

/* ---- entry points ---- */

PPH_EXPORT int perfprof_heap_attach(const char* path) {
    struct pph_tls* t = &pph_t;
    const uint32_t g = t->guard;
    t->guard = 1;
    pph_injected = 1;
    const int rc = attach(path);
    t->guard = g;
    return rc;
}

PPH_EXPORT int perfprof_heap_detach(void) {
    struct pph_tls* t = &pph_t;
    const uint32_t g = t->guard;
    t->guard = 1;
    turn_off();
    t->guard = g;
    return 0;
}

/* LD_PRELOAD: attach when perf-prof named a channel and the agent is among the preloaded objects
 * (not when the injector dlopen'd it, RTLD_LOCAL, into a process that has PPH_ENV set: its
 * attach call does). Not decided by what dlsym finds for malloc: in a non-PIE executable that
 * takes malloc's address, that is the executable's PLT entry. */
__attribute__((constructor)) static void preload_init(void) {
    const char* path = getenv(PPH_ENV);
    const char* preload = getenv("LD_PRELOAD");
    if (!path || !*path || !preload) return;
    Dl_info self;
    if (!dladdr((void*)preload_init, &self) || !self.dli_fname) return;
    const char* base = strrchr(self.dli_fname, '/');
    if (!strstr(preload, base ? base + 1 : self.dli_fname)) return;
    struct pph_tls* t = &pph_t;
    t->guard = 1;
    attach(path);
    t->guard = 0;
}

/* At exit, a late destructor: perf-prof's leak scan reads the process while this thread waits
 * (futex on scan_done, in 100 ms slices), never longer than PPH_EXIT_SCAN_TIMEOUT_NS, and no
 * longer once perf-prof is gone or asks to detach. */
/* Where the scan of the exiting thread's stack starts: the stack pointer of exit()'s caller, as
 * the call left it. What lies below is exit()'s own frames (the destructors', the loader's, this
 * one), laid where the program's calls (and the agent's hooks) left stale copies of pointers that
 * are dead: valgrind, scanning after the process has run its course, sees none of them. Found by
 * walking this thread's stack up to the frame in libc's exit(); this function's own stack
 * pointer when that frame is not found. */
__attribute__((noinline)) static uint64_t exit_caller_sp(void) {
    uint64_t here;
    __asm__ volatile("mov %%rsp, %0" : "=r"(here));
    void* exit_fn = dlsym(RTLD_DEFAULT, "exit");
    Dl_info info;
    const ElfW(Sym)* sym = 0;
    if (!exit_fn || !dladdr1(exit_fn, &info, (void**)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size) return here;
    const uint64_t lo = (uint64_t)(uintptr_t)info.dli_saddr, hi = lo + sym->st_size;
    enum { kFrames = 64 };
    uint64_t pcs[kFrames], sps[kFrames];
    const int n = pph_unwind_sp(PPH_CALLER_FRAME(), pcs, sps, kFrames);
    for (int i = 0; i + 1 < n; i++)
        if (pcs[i] > lo && pcs[i] <= hi) return sps[i + 1];
    return here;
}

__attribute__((destructor(101))) static void exit_scan(void) {
    struct pph_tls* t = &pph_t;
    struct pph_header* h = pph_rs.h;
    if (!h || g_dead || !__atomic_load_n(&pph_on, __ATOMIC_ACQUIRE)) return;
    const uint32_t g = t->guard;
    t->guard = 1;
    pph_flush_counts(t);
    if ((h->flags & PPH_F_EXIT_SCAN) && h->mode == PPH_FULL && !profiler_gone(h) &&
        !__atomic_load_n(&h->detach, __ATOMIC_ACQUIRE)) {
        const uint64_t sp = exit_caller_sp();
        __atomic_store_n(&h->exit_tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
        __atomic_store_n(&h->exit_sp, sp, __ATOMIC_RELAXED);
        __atomic_store_n(&h->exit_state, PPH_EXIT_WAITING, __ATOMIC_RELEASE);
        const uint64_t start = now_ns();
        while (!__atomic_load_n(&h->scan_done, __ATOMIC_ACQUIRE)) {
            struct timespec slice = {0, 100000000};
            syscall(SYS_futex, &h->scan_done, FUTEX_WAIT, 0, &slice, 0, 0);
            if (profiler_gone(h) || __atomic_load_n(&h->detach, __ATOMIC_ACQUIRE) ||
                now_ns() - start > PPH_EXIT_SCAN_TIMEOUT_NS)
                break;
        }
        __atomic_store_n(&h->exit_state, PPH_EXIT_DONE, __ATOMIC_RELEASE);
    }
    t->guard = g;
}
