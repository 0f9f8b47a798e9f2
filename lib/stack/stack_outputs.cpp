#include "stack/stack_outputs.h"

namespace perfprof::stack {

StackOutputs stack_outputs(const Options& opt, sym::Symbolizer& symbols, const StackRequest& r) {
    StackOutputs out;
    if (r.stacks) {
        out.printer = std::make_unique<Printer>(symbols, r.kernel, r.user, r.max_stack);
        if (r.flame && opt.flame_graph_given)
            out.flame = std::make_unique<FlameGraph>(out.printer.get(), opt.flame_graph, r.flame_count);
    }
    out.pprof = PprofStacks::from_options(opt, r.profiler, out.printer.get(), r.pprof_kind);
    return out;
}

bool count_stack(FlameGraph* flame, PprofStacks* pprof, const Sample& s, std::string_view comm, uint64_t n) {
    if (!flame && !pprof) return false;
    if (n == 0) return true;
    if (comm == "<...>") comm = {};
    if (flame) flame->add_callchain(s.callchain, s.callchain_nr, s.pid, comm, n);
    if (pprof) pprof->add_callchain(s.callchain, s.callchain_nr, s.pid, comm, n);
    return true;
}

}  // namespace perfprof::stack
