// --call-graph fp|dwarf[,SIZE] (perf's spelling; -g is fp): what a stack-recording event asks
// of the kernel, and the user half of each such sample unwound as it arrives.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "perf-prof/options.h"
#include "perf-prof/sample.h"
#include "unwind/code_locator.h"
#include "unwind/unwinder.h"

namespace perfprof::unwind {

constexpr uint32_t kDefaultStackCopy = 8192;  // perf's default dump size
constexpr uint32_t kMaxStackCopy = 65528;     // the kernel's limit (a u16 record size, 8-aligned)

// The bytes of user stack a sample copies for `--call-graph TEXT`: 0 for "fp", the size for
// "dwarf" / "dwarf,SIZE" (rounded up to a multiple of 8). Throws Error::usage for anything else.
uint32_t parse_call_graph(std::string_view text);

// Asks for call stacks with these halves on `a`: the kernel's call chain (PERF_SAMPLE_CALLCHAIN)
// for the kernel half, and for the user half either the chain (frame pointers) or, with
// `dwarf_stack` (Options::dwarf_stack), the user registers and a copy of that many bytes of the
// user stack (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, exclude_callchain_user).
void request_stacks(perf_event_attr& a, bool kernel, bool user, uint32_t dwarf_stack);

// True if samples of `a` carry a user stack to unwind.
inline bool carries_user_stack(const perf_event_attr& a) {
    return (a.sample_type & PERF_SAMPLE_STACK_USER) && (a.sample_type & PERF_SAMPLE_REGS_USER);
}

// The session's unwinder: one per run, used on the hot path before any profiler sees a sample.
class SampleUnwinder {
public:
    // Replaces s.callchain with the kernel part of the kernel's chain (if any) followed by
    // PERF_CONTEXT_USER and the frames unwound from s.user_regs and s.user_stack (for a sample
    // of a kernel thread, the kernel part alone). The chain stays valid until the next call.
    // `a` is the sample's event (its register mask and max stack); `code` knows the process's
    // objects and their CFI (the session's sym::Symbolizer).
    void unwind(Sample& s, const perf_event_attr& a, CodeLocator& code);
    const UnwindStats& stats() const { return stats_; }
    uint64_t samples() const { return samples_; }

private:
    std::vector<uint64_t> chain_;
    UnwindStats stats_;
    uint64_t samples_ = 0;
};

}  // namespace perfprof::unwind
