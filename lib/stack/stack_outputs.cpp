#include "stack/stack_outputs.h"

#include "stack/flame_graph.h"
#include "stack/pprof_stacks.h"

namespace perfprof::stack {

bool count_stack(FlameGraph* flame, PprofStacks* pprof, Printer& printer, const Sample& s,
                 std::string_view comm) {
    if (!flame && !pprof) return false;
    if (comm == "<...>") comm = {};
    if (flame) flame->add_callchain(printer, s.callchain, s.callchain_nr, s.pid, comm);
    if (pprof) pprof->add_callchain(s.callchain, s.callchain_nr, s.pid, comm);
    return true;
}

}  // namespace perfprof::stack
