// The eBPF filters of profile (SPEC §1.9): bpf/profile_filter.bpf.c configured from
// Options::ebpf, loaded once, and attached by the session to every sampling event.
#pragma once

#include <memory>

#include "perf-prof/options.h"

namespace perfprof::filter {

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
