// The eBPF filters of `profile` (SPEC §1.9): one BPF_PROG_TYPE_PERF_EVENT program, attached to
// every sampling event with PERF_EVENT_IOC_SET_BPF. It returns 1 to keep a sample, 0 to drop
// it; every condition set in .rodata before loading must hold (AND). Unset conditions are
// constants the verifier prunes, so a kernel lacking a field only fails the filters that read it.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

// Set by filter/bpf_filter.cpp before load; -1 (or false) = condition not used.
const volatile int irqs_disabled = -1;      // 1: IRQs off at the sample point, 0: on
const volatile int tif_need_resched = -1;   // 1: TIF_NEED_RESCHED set, 0: clear
const volatile long long exclude_pid = -1;  // drop this process (tgid)
const volatile bool nr_running = false;     // bound the run-queue length
const volatile unsigned int nr_running_min = 0;
const volatile unsigned int nr_running_max = 0xffffffff;
const volatile int sched_policy = -1;
const volatile bool prio = false;                     // keep only the priorities set in prio_mask
const volatile unsigned long long prio_mask[3] = {};  // bit p = priority p (0-139)

// Kernels with the generic TIF layout (asm-generic/thread_info_tif.h) moved the bit.
extern bool CONFIG_HAVE_GENERIC_TIF_BITS __kconfig __weak;

static __always_inline int irqs_off(struct bpf_perf_event_data* ctx) {
#if defined(__TARGET_ARCH_x86)
    return !(ctx->regs.flags & (1ul << 9));  // EFLAGS.IF clear
#elif defined(__TARGET_ARCH_arm64)
    return !!(ctx->regs.pstate & (1ul << 7));  // PSTATE.I set
#else
#error "irqs_disabled: unsupported architecture"
#endif
}

static __always_inline int need_resched_bit(void) {
    if (CONFIG_HAVE_GENERIC_TIF_BITS) return 4;
#if defined(__TARGET_ARCH_arm64)
    return 1;
#else
    return 3;
#endif
}

SEC("perf_event")
int profile_filter(struct bpf_perf_event_data* ctx) {
    struct task_struct* task = (struct task_struct*)bpf_get_current_task();

    if (irqs_disabled >= 0 && irqs_off(ctx) != irqs_disabled) return 0;
    if (tif_need_resched >= 0) {
        unsigned long flags = BPF_CORE_READ(task, thread_info.flags);
        if ((int)((flags >> need_resched_bit()) & 1) != tif_need_resched) return 0;
    }
    if (exclude_pid >= 0 && (long long)(bpf_get_current_pid_tgid() >> 32) == exclude_pid) return 0;
    if (nr_running) {
        unsigned int n = BPF_CORE_READ(task, se.cfs_rq, rq, nr_running);
        if (n < nr_running_min || n > nr_running_max) return 0;
    }
    if (sched_policy >= 0 && (int)BPF_CORE_READ(task, policy) != sched_policy) return 0;
    if (prio) {
        int p = BPF_CORE_READ(task, prio);
        if (p < 0 || p > 139) return 0;
        if (!((prio_mask[p >> 6] >> (p & 63)) & 1)) return 0;
    }
    return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
