// The eBPF filters of profile (SPEC §1.9): bpf/profile_filter.bpf.c configured from
// profile's options, loaded once, and attached by the session to every sampling event.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace perfprof::filter {

// The conditions (ANDed): each one set keeps only the samples that satisfy it.
struct EbpfFilters {
    std::optional<int> irqs_disabled;     // --irqs_disabled[=0|1]
    std::optional<int> tif_need_resched;  // --tif_need_resched[=0|1]
    std::optional<uint32_t> exclude_pid;  // --exclude_pid: not this process (tgid)
    std::optional<uint32_t> nr_running_min, nr_running_max;
    std::optional<int> sched_policy;  // SCHED_* number
    std::vector<int> prio;            // --prio LIST, sorted; empty = not given

    bool any() const {
        return irqs_disabled || tif_need_resched || exclude_pid || nr_running_min || nr_running_max ||
               sched_policy || !prio.empty();
    }
};

class BpfFilter {
public:
    // Loads the program with the conditions of `f` (AND). Throws Error naming the reason when
    // the kernel refuses it or this build has no eBPF support: never a silent unfiltered run.
    // verbose > 1 routes libbpf's messages (the verifier log) to stderr.
    static std::unique_ptr<BpfFilter> load(const EbpfFilters& f, int verbose);
    ~BpfFilter();
    BpfFilter(const BpfFilter&) = delete;
    BpfFilter& operator=(const BpfFilter&) = delete;

    // The BPF_PROG_TYPE_PERF_EVENT program, for PERF_EVENT_IOC_SET_BPF.
    int prog_fd() const;

private:
    struct Impl;
    explicit BpfFilter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace perfprof::filter
