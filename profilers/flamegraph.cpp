// flamegraph: renders a folded-stacks file (ours, or `perf script | stackcollapse-perf.pl`
// output) as an interactive SVG on stdout; with --diff, how a second profile differs from a
// first (flamegraph/flame_diff.h).
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "core/parse.h"
#include "flamegraph/flame_svg.h"
#include "flamegraph/svg.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

struct FlamegraphOptions final : ProfilerOptions {
    flamegraph::FlameOptions fg;
    bool title_given = false;
    bool colors_given = false;
    bool diff = false;
};

// "0.5" pixels or "0.1%" of the total.
void parse_min_width(std::string_view v, flamegraph::FlameOptions& fg) {
    const bool pct = !v.empty() && v.back() == '%';
    if (pct) v.remove_suffix(1);
    double d = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !(d >= 0) || d > (pct ? 100 : 1e6))
        throw Error::usage("option `minwidth': expected pixels or a percent such as 0.5 or 0.1%");
    fg.min_width = d;
    fg.min_width_percent = pct;
}

using K = ArgKind;
using G = Group;
using Own = OwnOptions<FlamegraphOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "title", "text", K::Value, false, G::Profiler, "title (default: Flame Graph)",
             [](FlamegraphOptions& o, OptionValue v) {
                 o.fg.title = std::string(*v);
                 o.title_given = true;
             }),
    Own::row(0, "subtitle", "text", K::Value, false, G::Profiler, "second line under the title",
             [](FlamegraphOptions& o, OptionValue v) { o.fg.subtitle = std::string(*v); }),
    Own::row(0, "width", "px", K::Value, false, G::Profiler, "picture width (default 1200)",
             [](FlamegraphOptions& o, OptionValue v) {
                 o.fg.width = int(core::parse_bounded(*v, "width", 100000));
                 if (o.fg.width < 100) throw Error::usage("option `width': at least 100 pixels");
             }),
    Own::row(0, "height", "px", K::Value, false, G::Profiler, "height of a frame (default 16)",
             [](FlamegraphOptions& o, OptionValue v) {
                 o.fg.frame_height = int(core::parse_bounded(*v, "height", 200));
                 if (o.fg.frame_height < 4) throw Error::usage("option `height': at least 4 pixels");
             }),
    Own::row(0, "minwidth", "px|pct%", K::Value, false, G::Profiler,
             "merge frames narrower than this (default 0.1\n"
             "pixels; 0 draws every frame)",
             [](FlamegraphOptions& o, OptionValue v) { parse_min_width(*v, o.fg); }),
    Own::row(0, "inverted", "", K::Flag, false, G::Profiler, "icicle graph: the root at the top",
             [](FlamegraphOptions& o, OptionValue v) { o.fg.inverted = flag_value(v); }),
    Own::row(0, "reverse", "", K::Flag, false, G::Profiler, "merge stacks from their leaves (callers view)",
             [](FlamegraphOptions& o, OptionValue v) { o.fg.reverse = flag_value(v); }),
    Own::row(0, "colors", "palette", K::Value, false, G::Profiler,
             "kind (by frame kind, default), hot, mem, io, red,\n"
             "green, blue, aqua, yellow, purple, orange",
             [](FlamegraphOptions& o, OptionValue v) {
                 if (!flamegraph::valid_palette(std::string(*v)))
                     throw Error::usage("option `colors': unknown palette '" + std::string(*v) +
                                        "' (one of " + flamegraph::palette_names() + ")");
                 o.fg.colors = std::string(*v);
                 o.colors_given = true;
             }),
    Own::row(0, "countname", "name", K::Value, false, G::Profiler, "what a count is (default samples)",
             [](FlamegraphOptions& o, OptionValue v) {
                 if (v->empty()) throw Error::usage("option `countname': empty name");
                 o.fg.count_name = std::string(*v);
             }),
    Own::row(0, "diff", "", K::Flag, false, G::Profiler,
             "differential: BEFORE.folded AFTER.folded (or one\n"
             "file of \"stack before after\" lines); draws AFTER,\n"
             "red grew, blue shrank",
             [](FlamegraphOptions& o, OptionValue v) { o.diff = flag_value(v); }),
    Own::row(0, "normalize", "", K::Flag, false, G::Profiler, "with --diff: scale BEFORE to AFTER's total",
             [](FlamegraphOptions& o, OptionValue v) { o.fg.normalize = flag_value(v); }),
};

// Parsed as it is read: the stacks hold all the text says, in less memory than the text.
flamegraph::ParseReport read_input(const std::string& path, flamegraph::FoldedStacks& stacks,
                                   flamegraph::Feed feed) {
    FILE* in = path == "-" ? stdin : std::fopen(path.c_str(), "re");
    if (!in) throw Error::sys(errno, "cannot open '" + path + "'");
    flamegraph::FoldedReader reader(stacks, feed);
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) reader.feed({buf, n});
    const bool failed = std::ferror(in);
    if (in != stdin) std::fclose(in);
    if (failed) throw Error::sys(EIO, "cannot read '" + path + "'");
    return reader.finish();
}

// One input file read into `stacks`: what it held, and the name to report it by.
struct Input {
    std::string shown;
    flamegraph::ParseReport report;
};

// Reads `path`; a file with no stack at all is an error (nothing to draw or compare).
Input read_file(const std::string& path, flamegraph::FoldedStacks& stacks, flamegraph::Feed feed,
                const char* role) {
    Input in{path == "-" ? "stdin" : path, {}};
    const uint64_t had = stacks.size();
    in.report = read_input(path, stacks, feed);
    if (stacks.size() == had) {
        const std::string what = std::string(role) + in.shown;
        if (in.report.bad)
            throw Error(what + ":" + std::to_string(in.report.first_bad) + ": " + in.report.why +
                        "; no line of the file is a folded stack");
        throw Error(what + ": no stacks to draw (the file is empty)");
    }
    return in;
}

int render(const Options& opt) {
    const auto& own = opt.own_as<FlamegraphOptions>();
    const size_t files = opt.workload.size();
    if (own.diff ? files < 1 || files > 2 : files != 1) {
        if (files == 0)
            throw Error::usage(own.diff ? "flamegraph --diff: name BEFORE.folded and AFTER.folded"
                                        : "flamegraph: name the folded file to draw ('-' for stdin)");
        throw Error::usage(std::string(own.diff
                                           ? "flamegraph --diff takes two folded files, BEFORE and AFTER, "
                                             "options before them"
                                           : "flamegraph takes one folded file, options before it") +
                           " ('" + opt.workload[own.diff ? 2 : 1] + "' came after '" +
                           opt.workload[own.diff ? 1 : 0] + "'; see 'perf-prof flamegraph -h')");
    }
    if (!own.diff && own.fg.normalize) throw Error::usage("flamegraph: --normalize goes with --diff");
    if (own.diff && own.colors_given) throw Error::usage("flamegraph: --colors does not apply to --diff");
    if (own.diff && files == 2 && opt.workload[0] == "-" && opt.workload[1] == "-")
        throw Error::usage("flamegraph --diff: stdin ('-') can be one of the files, not both");
    flamegraph::FoldedStacks stacks;
    std::vector<Input> inputs;
    if (!own.diff) {
        inputs.push_back(read_file(opt.workload[0], stacks, flamegraph::Feed::Drawn, ""));
    } else if (files == 1) {
        inputs.push_back(read_file(opt.workload[0], stacks, flamegraph::Feed::Pairs, ""));
    } else {
        // Both profiles go into one set, BEFORE's counts as before counts: the picture's walk
        // adds up the stacks of each frame, whichever file they came from.
        inputs.push_back(read_file(opt.workload[0], stacks, flamegraph::Feed::Before, "BEFORE "));
        inputs.push_back(read_file(opt.workload[1], stacks, flamegraph::Feed::Drawn, "AFTER "));
    }
    if (own.diff && stacks.total() == 0)
        throw Error("flamegraph --diff: AFTER has no samples to draw (every after count is 0)");
    if (own.diff && stacks.before_total() == 0)
        throw Error("flamegraph --diff: BEFORE has no samples to compare with (every before count is 0)");
    flamegraph::FlameOptions fg = own.fg;
    if (!own.title_given && fg.reverse) fg.title = "Flame Graph (reversed)";
    if (!own.title_given && own.diff)
        fg.title = fg.reverse ? "Differential Flame Graph (reversed)" : "Differential Flame Graph";
    flamegraph::write_file(
        "", [&](const flamegraph::TextSink& sink) { flamegraph::render_flame_graph(stacks, fg, sink); });
    for (const Input& in : inputs) {
        const flamegraph::ParseReport& r = in.report;
        if (r.bad)
            std::fprintf(stderr, "perf-prof: %s:%zu: %s; skipped %zu such line%s, drew the other %zu\n",
                         in.shown.c_str(), r.first_bad, r.why.c_str(), r.bad, r.bad == 1 ? "" : "s", r.lines);
    }
    return 0;
}

}  // namespace

extern const ProfilerInfo flamegraph_info;
const ProfilerInfo flamegraph_info = {
    .name = "flamegraph",
    .kind = ProfilerInfo::Kind::Command,
    .summary = "Draw a folded-stacks file as an interactive SVG flame graph.",
    .usage =
        "[OPTION...] FILE.folded > out.svg  |  --diff [--normalize] BEFORE.folded AFTER.folded > diff.svg",
    .body =
        {
            "SYNOPSIS",
            "    Render folded stacks (\"root;...;leaf COUNT\" per line: --flame-graph files, or",
            "    perf script | stackcollapse-perf.pl output) into one self-contained SVG on stdout:",
            "    hover for a frame's count and share, click to zoom, Search (Ctrl-F) highlights",
            "    the frames a regular expression matches and shows their share of the total.",
            "    Frames are coloured by kind: _[k] kernel, _[j] JIT, _[i] inlined, _[l] library",
            "    (--flame-graph files carry these), [dso+0x...] frames without a symbol,",
            "    [unknown]; the shade follows the name. The subtitle gives the sample count.",
            "",
            "    --diff draws AFTER with each frame coloured by its change from BEFORE: red grew,",
            "    blue shrank, the shade by how much (full at new or gone, half way at doubled or",
            "    halved), light grey unchanged; a frame's title gives both counts and the change",
            "    (+100.0%, new). Frames only BEFORE had are listed under the picture. --normalize",
            "    scales BEFORE to AFTER's total first. One file of \"stack before after\" lines",
            "    (FlameGraph's difffolded.pl output) works too.",
            "",
            "EXAMPLES",
            "    perf-prof flamegraph cpu.folded > cpu.svg",
            "    perf-prof flamegraph --inverted --minwidth 0 --title 'Off-CPU' waits.folded > waits.svg",
            "    perf script | stackcollapse-perf.pl | perf-prof flamegraph - > perf.svg",
            "    perf-prof flamegraph --diff --normalize before.folded after.folded > diff.svg",
        },
    .run_words = render,
    .global_options = false,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
