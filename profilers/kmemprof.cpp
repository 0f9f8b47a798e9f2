// kmemprof: bytes allocated and freed per call stack (SPEC-PROFILERS §P6), a preset of
// multi-trace's driver (lib/pairing/driver) with the kmemprof implementation (§4.6.9).
#include <string>
#include <vector>

#include "pairing/driver.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

const OptionRow kOwnOptions[] = {pairing::rows::key};

class KmemprofProfiler final : public pairing::PresetProfiler {
public:
    explicit KmemprofProfiler(Context& ctx) : PresetProfiler(ctx) {}

    pairing::Preset preset() override {
        pairing::Preset p;
        p.name = "kmemprof";
        p.impl = "kmemprof";
        // pages: multi-trace's 1 MiB a CPU, not SPEC's 64 pages that lose events under a burst.
        return p;
    }
};

std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    return pairing::help_template(opt, events, "kmemprof", "kmemprof");
}

}  // namespace

extern const ProfilerInfo kmemprof_info;
const ProfilerInfo kmemprof_info = {
    .name = "kmemprof",
    .summary = "Memory allocated and freed per call stack: multi-trace --impl kmemprof.",
    .usage = "-e ALLOC[,ALLOC...] -e FREE[,FREE...] [-k EXPR] [--order] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    The events of the first -e allocate (size=EXPR is required), those of the",
            "    next free; an allocation and the free with the same key (key= or -k,",
            "    usually the pointer) pair. Blocks of bytes and counts per stack (add the",
            "    stack attribute on both sides) every interval and at exit. Keys on",
            "    several CPUs need --order.",
            "",
            "EXAMPLES",
            "    perf-prof kmemprof -e kmem:kmalloc//ptr=ptr/size=bytes_req/stack/ -e kmem:kfree//ptr=ptr/stack/ \\",
            "        -k ptr --order -i 1000",
            "    perf-prof kmemprof -e 'kmem:mm_page_alloc//size=4096<<order/key=pfn/stack/' \\",
            "        -e 'kmem:mm_page_free//key=pfn/stack/' --order -i 1000",
        },
    .options =
        {
            {Opt::Event, "allocation events, then free events"},
            {Opt::UserCallchain, "user stacks too, for events with the stack attribute"},
            {Opt::KernelCallchain},
        },
    .create = create_profiler<KmemprofProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = OwnOptions<pairing::Settings>::make,
};

}  // namespace perfprof
