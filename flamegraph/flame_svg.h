// Our own flame-graph renderer: folded stacks → one self-contained interactive SVG (no network,
// no external script). Frames are merged by prefix into a tree, siblings sorted by name, widths
// proportional to counts; frames narrower than the minimum width are merged with their narrow
// neighbours (or dropped when even the merge is too narrow), so the picture's size is bounded
// by its width and depth, not by the number of stacks. The script (flamegraph/flamegraph.js)
// gives tooltips, click-to-zoom and reset, regex search with the matched share, and flips
// between flame (root at the bottom) and icicle (root at the top) orientation.
#pragma once

#include <string>

#include "flamegraph/folded.h"
#include "flamegraph/svg.h"

namespace perfprof::flamegraph {

struct FlameOptions {
    std::string title = "Flame Graph";
    std::string subtitle;                // what was profiled; empty = none
    std::string count_name = "samples";  // what a count is: samples, events, bytes, ...
    int width = 1200;                    // pixels
    int frame_height = 16;               // pixels per level
    double min_width = 0.1;              // frames narrower than this (px) are merged; 0 = none
    bool min_width_percent = false;      // min_width is a percent of the total instead
    bool inverted = false;               // icicle: root at the top
    bool reverse = false;                // merge stacks from their leaves (callers of hot leaves)
    std::string colors = "kind";         // palette: by frame kind, or one of palette_names()
    bool normalize = false;              // differential stacks: BEFORE scaled to AFTER's total
};

// The palettes --colors takes, comma-separated: "kind,hot,mem,io,red,...".
const char* palette_names();
bool valid_palette(const std::string& name);

struct FlameStats {
    size_t frames = 0;  // frames drawn (the root included)
    size_t merged = 0;  // of them, merges of narrow frames
    int depth = 0;      // levels drawn
    size_t gone = 0;    // differential: frames only in BEFORE (listed under the picture)
};

// Differential stacks (FoldedStacks::differential(), flamegraph/flame_diff.h) are drawn with
// their after counts, each frame coloured and titled by its change; the frames only BEFORE had
// are listed under the picture, the widest first, each under the drawn frame that lost it.
//
// The SVG of `stacks`, which must not be empty, handed to `sink` in pieces as it is made (a
// picture of millions of frames is never whole in memory).
void render_flame_graph(const FoldedStacks& stacks, const FlameOptions& opt, const TextSink& sink,
                        FlameStats* stats = nullptr);
// The same, whole.
std::string render_flame_graph(const FoldedStacks& stacks, const FlameOptions& opt,
                               FlameStats* stats = nullptr);

}  // namespace perfprof::flamegraph
