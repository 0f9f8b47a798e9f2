// libFuzzer target for the flame-graph renderer (flamegraph/): folded text of any shape goes
// through parse_folded and, when it holds stacks, render_flame_graph with merging on and off.
// Findings: a crash, a sanitizer report, a hang, an exception, or a picture that does not end
// its document or whose root does not hold every count.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "flamegraph/flame_svg.h"
#include "flamegraph/folded.h"

using namespace perfprof::flamegraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    FoldedStacks stacks;
    const ParseReport r = parse_folded(text, stacks);
    if (r.bad && r.first_bad == 0) std::abort();
    if (stacks.empty()) return 0;
    for (double min_width : {0.0, 0.1, 50.0}) {
        FlameOptions o;
        o.min_width = min_width;
        o.reverse = min_width > 1;
        FlameStats st;
        const std::string svg = render_flame_graph(stacks, o, &st);
        if (st.frames == 0 || svg.size() < 7 || svg.compare(svg.size() - 7, 7, "</svg>\n") != 0) std::abort();
        const std::string root = "data-n=\"" + std::to_string(stacks.total()) + "\"><title>all (";
        if (svg.find(root) == std::string::npos) std::abort();
    }
    return 0;
}
