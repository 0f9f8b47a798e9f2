#include "filter/bpf_filter.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/fd.h"
#include "perf-prof/error.h"
#include "profile_filter.skel.h"

namespace perfprof::filter {

namespace {

int g_verbose = 0;

// libbpf's messages, the verifier log among them, only with -vv: the error says the rest.
int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
    if (g_verbose < 2 || (level == LIBBPF_DEBUG && g_verbose < 3)) return 0;
    return std::vfprintf(stderr, fmt, ap);
}

}  // namespace

struct BpfFilter::Impl {
    core::CPtr<profile_filter_bpf, &profile_filter_bpf::destroy> skel;
};

BpfFilter::BpfFilter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpfFilter::~BpfFilter() = default;

int BpfFilter::prog_fd() const {
    return bpf_program__fd(impl_->skel->progs.profile_filter);
}

std::unique_ptr<BpfFilter> BpfFilter::load(const EbpfFilters& f, int verbose) {
    g_verbose = verbose;
    libbpf_set_print(libbpf_print);
    auto fail = [](const char* what, int err) {
        const bool perm = err == EPERM || err == EACCES;
        return Error(
            std::string(what) + ": " + std::strerror(err),
            perm ? "eBPF programs need root, or CAP_BPF and CAP_PERFMON" : "-vv prints libbpf's log");
    };

    auto impl = std::make_unique<Impl>();
    impl->skel.reset(profile_filter_bpf::open());
    if (!impl->skel) throw fail("cannot open the eBPF filter", errno);
    auto* ro = impl->skel->rodata;
    ro->irqs_disabled = f.irqs_disabled.value_or(-1);
    ro->tif_need_resched = f.tif_need_resched.value_or(-1);
    ro->exclude_pid = f.exclude_pid ? static_cast<long long>(*f.exclude_pid) : -1;
    ro->nr_running = f.nr_running_min || f.nr_running_max;
    ro->nr_running_min = f.nr_running_min.value_or(0);
    ro->nr_running_max = f.nr_running_max.value_or(UINT32_MAX);
    ro->sched_policy = f.sched_policy.value_or(-1);
    ro->prio = !f.prio.empty();
    for (int p : f.prio) ro->prio_mask[p >> 6] |= 1ull << (p & 63);
    if (int err = profile_filter_bpf::load(impl->skel.get()); err)
        throw fail("cannot load the eBPF filter", -err);
    return std::unique_ptr<BpfFilter>(new BpfFilter(std::move(impl)));
}

}  // namespace perfprof::filter
