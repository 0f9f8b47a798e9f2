#include "hw/hw_stack.h"

#include <linux/perf_event.h>

#include "hw/hw_print.h"

namespace perfprof::hw {

void append_stack_with_regs(stack::Printer& printer, const uint64_t* chain, uint64_t nr, uint32_t pid,
                            int max_stack, uint64_t mask, const uint64_t* values, RegsAt at,
                            std::string& out) {
    if (!chain) nr = 0;
    const uint64_t marker = at == RegsAt::UserPart ? PERF_CONTEXT_USER : PERF_CONTEXT_KERNEL;
    uint64_t split = nr;
    for (uint64_t i = 0; i < nr; i++)
        if (chain[i] == marker) {
            split = i;
            break;
        }
    // No such part: the block leads (interrupt registers) or closes (user registers) the stack.
    if (split == nr && at == RegsAt::KernelPart) split = 0;
    if (split) printer.print(chain, split, pid, max_stack, out);
    append_regs_block(mask, values, out);
    if (split < nr) printer.print(chain + split, nr - split, pid, max_stack, out);
}

}  // namespace perfprof::hw
