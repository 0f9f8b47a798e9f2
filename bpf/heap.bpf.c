// The heap profile of one process (kmemleak --user, serve): uprobes on its allocator's entry
// points and uretprobes on their returns. Sizes are paired with the returned pointers per thread
// in the kernel, and only the outstanding allocations (pointer → size, stack, time) and
// per-stack totals are kept, in maps read at report time: no record per call crosses to user
// space. With sample_rate, only some allocations are kept (tcmalloc's and Go's sampling); with
// the growth programs attached, the stacks that grow the heap (brk, anonymous mmap) are counted.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define MAX_DEPTH 127
#define SIGSTOP 19
#define MAP_PRIVATE 0x02
#define MAP_ANONYMOUS 0x20
#define MAP_TYPE 0x0f
#define PROT_NONE 0

// Entries of sample_gaps; a power of two, so that the modulo of a random u32 is unbiased
// (lib/heap/heap_probes.h kSampleQuantiles says the same).
#define SAMPLE_QUANTILES 4096

// The allocator functions (lib/heap/allocator.h keeps the same numbers).
enum fn_kind {
    FN_MALLOC,          // (size)
    FN_CALLOC,          // (n, size)
    FN_REALLOC,         // (old, size)
    FN_REALLOCARRAY,    // (old, n, size)
    FN_MEMALIGN,        // (align, size): memalign, aligned_alloc
    FN_POSIX_MEMALIGN,  // (memptr, align, size) → 0 and *memptr
    FN_VALLOC,          // (size): valloc, pvalloc
    FN_FREE,            // (ptr)
};

const volatile int target_tgid = 0;
// Mean bytes allocated between kept allocations; 0 keeps every allocation (kmemleak).
const volatile __u64 sample_rate = 0;
// Freed blocks matter only to kmemleak's reachability scan; serve, which runs for long, does
// not keep them.
const volatile bool keep_freed = true;
// The allocator is glibc's: a block is preceded by its chunk's size word (flag bits 0-2, bit 1
// set for a chunk of its own mapping), so that free() tells how much memory it frees even for
// a block allocated before the attach, whose stale contents must not be roots either.
const volatile bool glibc_chunks = false;
// Quantiles of the exponential distribution of mean sample_rate, filled by user space before
// the load: BPF has no floating point. gaps[i] = -ln((i + 0.5) / N) * rate, at least 1 (a
// 0-byte allocation is never kept: probability 1 - exp(0) = 0). Drawing a uniform index gives
// the distribution with its tail cut at ln(2N) * rate (about 9 * rate): gaps longer than that
// have probability 1/(2N) and are drawn as that maximum; the mean is off by less than 0.01 %.
const volatile __u64 sample_gaps[SAMPLE_QUANTILES] = {};

// One call in progress per thread. Calls made by the allocator itself (realloc calling malloc)
// are nested: only the outermost is recorded.
struct call {
    __u64 a0, a1, a2;
    __u64 sp;
    __u32 kind;
    __u32 depth;
    __u64 grew, grew_calls;  // growth of the heap during the call (brk, mmap), in bytes and calls
};

struct alloc {
    __u64 size;
    __u64 stack;  // key of `stacks`; 0: no stack
    __u64 time;   // CLOCK_MONOTONIC ns
    __u32 tid;
    __u32 pad;
};

struct stack {
    __u64 nr;
    __u64 ips[MAX_DEPTH];
};

struct totals {
    __u64 bytes, objects;  // allocated by this stack during the run (alloc_space, alloc_objects)
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, struct call);
} calls SEC(".maps");

// Sampling: per thread, the bytes still to allocate until the next kept allocation. LRU: the
// entries of threads that ended go first, and an evicted thread merely draws a new gap.
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, __s64);
} countdown SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 22);
    __type(key, __u64);
    __type(value, struct alloc);
} allocs SEC(".maps");

// Blocks freed since the attach (pointer → size), until an allocation starts there again:
// free memory, whose stale contents are no roots for the reachability scan.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 22);
    __type(key, __u64);
    __type(value, __u64);
} freed SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 16);
    __type(key, __u64);
    __type(value, struct stack);
} stacks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 16);
    __type(key, __u64);
    __type(value, struct totals);
} stack_totals SEC(".maps");

// Growth: what each stack grew the heap by (bytes), in how many calls (objects).
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1 << 16);
    __type(key, __u64);
    __type(value, struct totals);
} growth_totals SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct stack);
} scratch SEC(".maps");

// Read by user space through the skeleton's .bss.
__u64 total_alloc, total_free;  // calls recorded
__u64 dropped_allocs;           // the allocs map was full
__u64 dropped_stacks;           // the stacks map was full or the stack unreadable
__u64 exit_sp;                  // stack pointer of the thread that called exit()
__u32 exit_tid;
// Set by user space once every probe is in place, cleared first thing when it lets go (before
// the probes, whose removal takes a grace period each): the program stops the process at exit()
// only while someone is there to scan it and continue it.
volatile __u32 stop_armed;
__u64 exit_stops;  // times the program stopped the process at exit()
// Growth: the target's program break after its last brk() (0: none seen yet).
__u64 last_brk;

static __always_inline int ours(void) {
    return (int)(bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

static __always_inline __u32 tid(void) {
    return (__u32)bpf_get_current_pid_tgid();
}

// FNV-1a over the frames, never 0 (0 means "no stack"). `ctx`: a probe's registers or a
// tracepoint's record; the user stack is the task's either way.
static __always_inline __u64 stack_key(void* ctx) {
    __u32 zero = 0;
    struct stack* s = bpf_map_lookup_elem(&scratch, &zero);
    if (!s) return 0;
    long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
    if (n <= 0) {
        __sync_fetch_and_add(&dropped_stacks, 1);
        return 0;
    }
    s->nr = (__u64)n / 8;
    __u64 h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < MAX_DEPTH; i++) {
        if (i >= s->nr) break;
        h = (h ^ s->ips[i]) * 0x100000001b3ULL;
    }
    if (!h) h = 1;
    if (bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST) && !bpf_map_lookup_elem(&stacks, &h)) {
        __sync_fetch_and_add(&dropped_stacks, 1);
        return 0;
    }
    return h;
}

static __always_inline __s64 sample_gap(void) {
    return (__s64)sample_gaps[bpf_get_prandom_u32() % SAMPLE_QUANTILES];
}

// Whether to keep an allocation of `size` bytes: a Poisson process over the bytes the thread
// allocates, whose points fall an exponential gap apart. The allocation that reaches the next
// point is kept and the next gap starts after it; as the gap is memoryless, an allocation of
// s bytes is kept with probability 1 - exp(-s / sample_rate), whatever came before.
static __always_inline int sampled(__u64 size) {
    if (!sample_rate) return 1;
    __u32 t = tid();
    __s64* left = bpf_map_lookup_elem(&countdown, &t);
    if (!left) {
        __s64 first = sample_gap();  // a thread's first gap is drawn too: no bias at its start
        bpf_map_update_elem(&countdown, &t, &first, BPF_ANY);
        left = bpf_map_lookup_elem(&countdown, &t);
        if (!left) return 0;
    }
    *left -= (__s64)size;
    if (*left > 0) return 0;
    *left = sample_gap();
    return 1;
}

// Adds `bytes` and `objects` to the stack's entry of a totals map.
static __always_inline void add_totals(void* map, __u64 stack, __u64 bytes, __u64 objects) {
    struct totals* t = bpf_map_lookup_elem(map, &stack);
    if (!t) {
        struct totals z = {};
        bpf_map_update_elem(map, &stack, &z, BPF_NOEXIST);
        t = bpf_map_lookup_elem(map, &stack);
        if (!t) return;
    }
    __sync_fetch_and_add(&t->bytes, bytes);
    __sync_fetch_and_add(&t->objects, objects);
}

static __always_inline void record_alloc(struct pt_regs* ctx, __u64 ptr, __u64 size) {
    // The block is no free memory any more, kept or not.
    if (keep_freed) bpf_map_delete_elem(&freed, &ptr);
    if (!sampled(size)) return;
    struct alloc a = {.size = size, .time = bpf_ktime_get_ns(), .tid = tid()};
    a.stack = stack_key(ctx);
    if (bpf_map_update_elem(&allocs, &ptr, &a, BPF_ANY)) {
        __sync_fetch_and_add(&dropped_allocs, 1);
        return;
    }
    __sync_fetch_and_add(&total_alloc, 1);
    if (a.stack) add_totals(&stack_totals, a.stack, size, 1);
}

// The bytes glibc's chunk at user pointer `ptr` gives its user (malloc_usable_size): up to the
// next chunk's size word. 0 for a chunk of its own mapping, which free() unmaps, or when the
// word is unreadable or implausible.
static __always_inline __u64 glibc_usable(__u64 ptr) {
    __u64 word = 0;
    if (bpf_probe_read_user(&word, sizeof(word), (void*)(ptr - 8))) return 0;
    const __u64 chunk = word & ~7ULL;
    if ((word & 2) || chunk < 32 || (chunk & 15) || chunk > (1ULL << 40)) return 0;
    return chunk - 8;
}

static __always_inline void record_free(__u64 ptr) {
    if (!ptr) return;
    __sync_fetch_and_add(&total_free, 1);
    struct alloc* a = bpf_map_lookup_elem(&allocs, &ptr);
    __u64 size = a ? a->size : 0;  // 0: allocated before the attach, or not kept (sampling)
    if (a) bpf_map_delete_elem(&allocs, &ptr);
    if (!keep_freed) return;
    if (glibc_chunks) {
        // The whole chunk is free memory, the slack after the requested size included.
        const __u64 usable = glibc_usable(ptr);
        size = usable > size ? usable : size;
    }
    if (size) bpf_map_update_elem(&freed, &ptr, &size, BPF_ANY);
}

// Whether the thread is inside an allocator call already, at a deeper stack pointer.
static __always_inline struct call* nested(__u32 t, __u64 sp) {
    struct call* c = bpf_map_lookup_elem(&calls, &t);
    // A call whose return was never seen (longjmp, a killed thread) is at a shallower or
    // equal stack pointer than any new call: it is stale, not an outer call.
    if (c && c->depth > 0 && sp < c->sp) return c;
    return 0;
}

static __always_inline int enter(struct pt_regs* ctx, __u32 kind) {
    if (!ours()) return 0;
    __u32 t = tid();
    __u64 sp = PT_REGS_SP(ctx);
    struct call* c = nested(t, sp);
    if (c) {
        c->depth++;
        return 0;
    }
    struct call n = {.a0 = PT_REGS_PARM1(ctx),
                     .a1 = PT_REGS_PARM2(ctx),
                     .a2 = PT_REGS_PARM3(ctx),
                     .sp = sp,
                     .kind = kind,
                     .depth = 1};
    bpf_map_update_elem(&calls, &t, &n, BPF_ANY);
    return 0;
}

static __always_inline int leave(struct pt_regs* ctx) {
    if (!ours()) return 0;
    __u32 t = tid();
    struct call* c = bpf_map_lookup_elem(&calls, &t);
    if (!c || c->depth == 0) return 0;
    if (--c->depth > 0) return 0;
    __u64 ret = PT_REGS_RC(ctx);
    __u64 a0 = c->a0, a1 = c->a1, a2 = c->a2;
    if (c->grew) {
        // What the call grew the heap by goes to its caller's stack, read here where the
        // return address is the caller's (see grew()).
        __u64 stack = stack_key(ctx);
        if (stack) add_totals(&growth_totals, stack, c->grew, c->grew_calls);
        c->grew = c->grew_calls = 0;
    }
    switch (c->kind) {
        case FN_MALLOC:
        case FN_VALLOC:
            if (ret) record_alloc(ctx, ret, a0);
            break;
        case FN_CALLOC:
            if (ret) record_alloc(ctx, ret, a0 * a1);
            break;
        case FN_MEMALIGN:
            if (ret) record_alloc(ctx, ret, a1);
            break;
        case FN_REALLOC:
        case FN_REALLOCARRAY: {
            __u64 size = c->kind == FN_REALLOC ? a1 : a1 * a2;
            if (ret) {
                if (a0) record_free(a0);
                record_alloc(ctx, ret, size);
            } else if (size == 0 && a0) {
                record_free(a0);  // realloc(p, 0) frees p
            }
            break;
        }
        case FN_POSIX_MEMALIGN: {
            __u64 p = 0;
            if ((int)ret == 0 && !bpf_probe_read_user(&p, sizeof(p), (void*)a0) && p)
                record_alloc(ctx, p, a2);
            break;
        }
    }
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(heap_malloc) {
    return enter(ctx, FN_MALLOC);
}
SEC("uprobe")
int BPF_KPROBE(heap_calloc) {
    return enter(ctx, FN_CALLOC);
}
SEC("uprobe")
int BPF_KPROBE(heap_realloc) {
    return enter(ctx, FN_REALLOC);
}
SEC("uprobe")
int BPF_KPROBE(heap_reallocarray) {
    return enter(ctx, FN_REALLOCARRAY);
}
SEC("uprobe")
int BPF_KPROBE(heap_memalign) {
    return enter(ctx, FN_MEMALIGN);
}
SEC("uprobe")
int BPF_KPROBE(heap_posix_memalign) {
    return enter(ctx, FN_POSIX_MEMALIGN);
}
SEC("uprobe")
int BPF_KPROBE(heap_valloc) {
    return enter(ctx, FN_VALLOC);
}

SEC("uretprobe")
int BPF_KRETPROBE(heap_return) {
    return leave(ctx);
}

SEC("uprobe")
int BPF_KPROBE(heap_free) {
    if (!ours()) return 0;
    if (nested(tid(), PT_REGS_SP(ctx))) return 0;  // the allocator freeing for itself (realloc)
    record_free(PT_REGS_PARM1(ctx));
    return 0;
}

// exit(): stop the process before its memory goes, so that the report can scan it for
// pointers; user space continues it (SIGCONT) when done.
SEC("uprobe")
int BPF_KPROBE(heap_exit) {
    if (!ours() || !stop_armed) return 0;
    exit_sp = PT_REGS_SP(ctx);
    exit_tid = tid();
    __sync_fetch_and_add(&exit_stops, 1);
    bpf_send_signal(SIGSTOP);
    return 0;
}

// The heap grew by `bytes` in a system call: counted for the allocator call in progress on this
// thread when there is one, else for the stack of the system call. The allocator is seldom
// built with frame pointers (glibc is not): from inside it, the user stack stops at its first
// frame, while its return probe sees the caller's.
static __always_inline void grew(void* ctx, __u64 bytes) {
    __u32 t = tid();
    struct call* c = bpf_map_lookup_elem(&calls, &t);
    if (c && c->depth > 0) {
        c->grew += bytes;
        c->grew_calls++;
        return;
    }
    __u64 stack = stack_key(ctx);
    if (stack) add_totals(&growth_totals, stack, bytes, 1);
}

// Growth (attached only when asked): brk() moving the break up, by the difference with the
// previous break; the first brk() seen only sets that baseline.
SEC("tracepoint/syscalls/sys_exit_brk")
int heap_brk(struct trace_event_raw_sys_exit* ctx) {
    if (!ours()) return 0;
    __u64 now = (__u64)ctx->ret;  // the new break, or the unchanged one when brk() failed
    __u64 prev = last_brk;
    last_brk = now;
    if (prev && now > prev) grew(ctx, now - prev);
    return 0;
}

// Growth: private anonymous mappings (malloc's large blocks, new arenas). PROT_NONE ones only
// reserve address space (glibc's arenas, thread stack guards): no memory until mprotect(),
// which is not counted.
SEC("tracepoint/syscalls/sys_enter_mmap")
int heap_mmap(struct trace_event_raw_sys_enter* ctx) {
    if (!ours()) return 0;
    __u64 len = ctx->args[1], prot = ctx->args[2], flags = ctx->args[3];
    if (!(flags & MAP_ANONYMOUS) || (flags & MAP_TYPE) != MAP_PRIVATE || prot == PROT_NONE || !len) return 0;
    grew(ctx, len);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
