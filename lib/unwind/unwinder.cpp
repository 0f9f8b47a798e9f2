#include "unwind/unwinder.h"

#include "perf-prof/sample.h"

namespace perfprof::unwind {

size_t unwind(AddressSpace&, const UserState& st, uint64_t* out, size_t max, UnwindStats* stats) {
    if (!max) return 0;
    out[0] = st.regs[kRa];
    if (stats) stats->frames++;
    return 1;
}

}  // namespace perfprof::unwind
