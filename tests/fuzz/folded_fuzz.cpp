// libFuzzer target for the flame-graph renderer (flamegraph/): folded text of any shape goes
// through parse_folded and, when it holds stacks, render_flame_graph with merging on and off;
// then as differential input (flamegraph --diff): its halves as BEFORE and AFTER, and the whole
// as "stack before after" pairs, drawn plain and normalized.
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

namespace {

void diff(const FoldedStacks& stacks) {
    if (stacks.total() == 0 || stacks.before_total() == 0) return;
    for (bool normalize : {false, true}) {
        FlameOptions o;
        o.min_width = normalize ? 0.1 : 0;
        o.normalize = normalize;
        const std::string svg = render_flame_graph(stacks, o);
        if (svg.size() < 7 || svg.compare(svg.size() - 7, 7, "</svg>\n") != 0) std::abort();
        if (svg.find("data-n=\"" + std::to_string(stacks.total()) + "\"><title>all (") == std::string::npos)
            std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    {
        FoldedStacks two;
        parse_folded(text.substr(0, size / 2), two, Feed::Before);
        parse_folded(text.substr(size / 2), two, Feed::Drawn);
        diff(two);
        FoldedStacks pairs;
        parse_folded(text, pairs, Feed::Pairs);
        diff(pairs);
    }
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
