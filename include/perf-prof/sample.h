// Sample, LostRange: what the session hands a profiler on the hot path.
#pragma once

#include <cstdint>
#include <string_view>

namespace perfprof {

struct EventSpec;
class Profiler;

// A private call-chain marker (≥ PERF_CONTEXT_MAX, like the kernel's context markers, and none
// of them): the frames outside it were not recovered because the copy of the user stack ended
// (--call-graph dwarf) or the frame limit was reached. Printed as a "[truncated]" frame.
inline constexpr uint64_t kChainTruncated = static_cast<uint64_t>(-513);  // PERF_CONTEXT_USER - 1

// One PERF_RECORD_SAMPLE, decoded by offsets computed once per event. Pointers refer into
// the ring buffer (or its wrap copy) and are valid only during Profiler::sample().
struct Sample {
    const EventSpec* event = nullptr;  // which planned event produced it
    int event_index = -1;              // index of `event` in the plan
    int instance = -1;                 // ring-buffer instance: CPU index or thread index
    uint64_t ip = 0;                   // PERF_SAMPLE_IP
    uint32_t pid = 0, tid = 0;         // PERF_SAMPLE_TID
    uint64_t time = 0;                 // PERF_SAMPLE_TIME, perf clock ns
    uint64_t addr = 0;                 // PERF_SAMPLE_ADDR
    uint64_t id = 0;                   // PERF_SAMPLE_ID
    uint32_t cpu = UINT32_MAX;         // PERF_SAMPLE_CPU, UINT32_MAX = unknown
    uint64_t period = 0;               // PERF_SAMPLE_PERIOD
    // PERF_SAMPLE_READ: the words as the event's read_format lays them out (read them with
    // perfprof::ReadValues, perf-prof/read_values.h); read_value is the first counter value.
    const uint64_t* read = nullptr;
    uint32_t read_words = 0;
    uint64_t read_value = 0;
    const uint64_t* callchain = nullptr;  // PERF_SAMPLE_CALLCHAIN ips
    uint64_t callchain_nr = 0;
    const void* raw = nullptr;  // PERF_SAMPLE_RAW payload (tracepoint record)
    uint32_t raw_size = 0;
    // PERF_SAMPLE_REGS_USER: the ABI (0 = none: a kernel thread) and one value per bit of the
    // event's sample_regs_user, lowest bit first. PERF_SAMPLE_STACK_USER: the copy of the user
    // stack from the sampled stack pointer, user_stack_size bytes of it valid (dyn_size).
    uint64_t user_abi = 0;
    const uint64_t* user_regs = nullptr;
    const uint8_t* user_stack = nullptr;
    uint64_t user_stack_size = 0;
    // PERF_SAMPLE_REGS_INTR: the ABI (0 = none) and one value per bit of the event's
    // sample_regs_intr, lowest bit first: the registers where the event interrupted.
    uint64_t intr_abi = 0;
    const uint64_t* intr_regs = nullptr;
    // Set when the sample comes from a nested profiler (SPEC §2.8): that profiler prints it.
    Profiler* from = nullptr;
    // Set by a parent printing the sample under a title (multi-trace --detail, SPEC §4.6.7):
    // the line head shows it, padded to WALL's 26 columns, instead of WALL(ev).
    std::string_view title;
};

// A PERF_RECORD_SWITCH or PERF_RECORD_SWITCH_CPU_WIDE of an event planned with
// attr.context_switch: task `tid` left the CPU (`out`) or came onto it, at `time`.
struct ContextSwitch {
    uint32_t pid = 0, tid = 0;  // the task switched in or out (the record's sample_id)
    uint64_t time = 0;          // converted like Sample::time
    uint32_t cpu = UINT32_MAX;
    bool out = false;        // PERF_RECORD_MISC_SWITCH_OUT
    bool preempted = false;  // switched out while runnable (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
    int instance = -1;
};

// A PERF_RECORD_LOST: `count` records dropped on one ring between `start` and `end`
// (timestamps of the last record before and the first after the loss, 0 if unknown).
struct LostRange {
    int instance = -1;
    int cpu = -1;  // -1 when the ring is per thread
    int tid = -1;  // -1 when the ring is per CPU
    uint64_t count = 0;
    uint64_t start = 0, end = 0;
};

}  // namespace perfprof
