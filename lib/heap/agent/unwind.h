/* The heap agent's stack walker (x86-64): the return addresses of the thread that called the
 * allocator, from the call-frame information (.eh_frame, through each loaded object's
 * .eh_frame_hdr search table) of the objects mapped in the process, as Debian builds them
 * (no frame pointers). Each code address's rule (where the CFA is, where the caller's rbp and
 * return address were saved) is found once and kept in a lock-free cache keyed by address, so
 * a walk through code seen before costs a few loads per frame.
 *
 * Runs inside malloc: never allocates, takes no lock of its own, async-signal-safe; the only
 * library calls are dl_iterate_phdr and getpid, and only when an address lies in no object
 * known yet. Reads
 * only the stack between the starting sp and the frames the CFI describes, and the objects'
 * own mapped .eh_frame_hdr/.eh_frame. Stops at the outermost frame (return address undefined),
 * at an address no CFI covers (JIT code, a stripped .eh_frame), at a rule it does not handle (a
 * DWARF expression, but for the signal trampoline's: that frame is read as the kernel wrote it),
 * or when the stack pointer would not grow. */
#ifndef PERFPROF_HEAP_AGENT_UNWIND_H
#define PERFPROF_HEAP_AGENT_UNWIND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the walk starts: a code address in the caller (a return address, or any pc inside a
 * function: see `pc_is_return`), the stack pointer and rbp the caller had there. */
struct pph_frame {
    uint64_t pc, sp, bp;
};

/* Fills out[0..max) with pc (out[0]) and the return addresses of the frames above it,
 * innermost first; returns how many. The rule of a return address is looked up at address - 1
 * (inside the call instruction). */
int pph_unwind(struct pph_frame start, uint64_t* out, int max);

/* The same, with each frame's stack pointer in sps[] beside its pc in out[]: sps[0] = start.sp,
 * and sps[i] the stack pointer of the frame that out[i] returns into (its caller's, as the call
 * left it). */
int pph_unwind_sp(struct pph_frame start, uint64_t* out, uint64_t* sps, int max);

/* The start of the walk for the function that calls this macro, as seen from its caller: the
 * caller's return address, stack pointer after the return, and rbp. The function using it must
 * be compiled with frame pointers (-fno-omit-frame-pointer) and not be inlined. */
#define PPH_CALLER_FRAME()                                                                     \
    ((struct pph_frame){(uint64_t)__builtin_return_address(0), (uint64_t)__builtin_frame_address(0) + 16, \
                        *(uint64_t*)__builtin_frame_address(0)})

/* Objects were unloaded (dlclose): forget the objects and the cached rules. The next walk
 * reads the loaded objects anew. */
void pph_unwind_invalidate(void);

/* Statistics (tests, -v): walks, frames, rule-cache hits and misses, object list refreshes.
 * The calling thread's counts are exact; each other thread's lag by up to 256 of its walks. */
struct pph_unwind_stats {
    uint64_t walks, frames, hits, misses, refreshes;
};
void pph_unwind_stats(struct pph_unwind_stats* out);

#ifdef __cplusplus
}
#endif

#endif
