// The call stack of a hardware-event sample with its register block where SPEC-PROFILERS
// places it (§P8: user registers where the user part starts; §P12: interrupt registers where
// the kernel part starts).
#pragma once

#include <cstdint>
#include <string>

#include "perf-prof/sample.h"
#include "stack/stack_printer.h"

namespace perfprof::hw {

// Where the register block goes in the printed stack.
enum class RegsAt { UserPart, KernelPart };

// Appends the stack lines of `chain` (stack::Printer's lines) with the register block
// (`mask`, `values`; none when values is null) printed before the part `at` names; a chain
// without that part gets the block after its last line.
void append_stack_with_regs(stack::Printer& printer, const uint64_t* chain, uint64_t nr, uint32_t pid,
                            int max_stack, uint64_t mask, const uint64_t* values, RegsAt at,
                            std::string& out);

}  // namespace perfprof::hw
