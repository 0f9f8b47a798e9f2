// Unwinding a user stack from the registers and the copy of the stack a sample carries
// (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER): frame by frame through each object's CFI
// rows (cfi_table.h), falling back to the frame-pointer chain for a frame no CFI covers.
// Never reads outside the copy it is given, and always ends: every step must move the stack
// pointer up (a signal frame excepted, bounded by the frame limit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "unwind/cfi_table.h"

namespace perfprof::unwind {

// What the unwinder asks of a process's address space.
class AddressSpace {
public:
    virtual ~AddressSpace() = default;
    // The CFI of the object mapped at `pc` and `pc` in that object's address space. False when
    // no known file mapping holds `pc` (JIT code, garbage): then frame pointers are tried.
    // *table may be an empty table (an object without call-frame information).
    virtual bool find(uint64_t pc, CfiTable** table, uint64_t* obj_pc) = 0;
};

// A sample's user state: registers by DWARF number, and the copy of the stack from regs[kRsp].
struct UserState {
    uint64_t regs[kRegs] = {};
    uint32_t valid = 0;  // bit r: regs[r] is known
    const uint8_t* stack = nullptr;
    uint64_t stack_size = 0;  // bytes of the copy that are valid (the kernel's dyn_size)
};

struct UnwindStats {
    uint64_t frames = 0;      // frames written, the sampled pc included
    uint64_t cfi_frames = 0;  // steps taken through CFI rows
    uint64_t fp_frames = 0;   // steps taken through frame pointers (no CFI for that pc)
    uint64_t truncated = 0;   // chains ended by the end of the copy or the frame limit
    uint64_t broken = 0;      // chains ended early by a step that failed (no rule, bad value)
};

// Writes at most `max` return addresses, innermost first, the sampled pc first; when the copy
// ends (or `max` is reached) before the outermost frame, the last entry written is
// kChainTruncated (perf-prof/sample.h) instead. Returns how many entries were written.
size_t unwind(AddressSpace& space, const UserState& state, uint64_t* out, size_t max,
              UnwindStats* stats = nullptr);

}  // namespace perfprof::unwind
