// Differential flame graphs: the AFTER profile drawn, each frame coloured and titled by how its
// count changed from the BEFORE profile (flamegraph --diff). The counts come from a
// differential FoldedStacks (a before count per stack); this file holds the comparison itself:
// the scale that --normalize applies to BEFORE, the signed change of a frame, its colour and
// the words of its title.
#pragma once

#include <cstdint>
#include <string>

#include "flamegraph/folded.h"

namespace perfprof::flamegraph {

// What BEFORE's counts are multiplied by before they are compared: 1, or with --normalize
// AFTER's total over BEFORE's (so that a profile twice as long does not read as "everything
// grew").
struct DiffScale {
    double factor = 1;
    bool normalized = false;
};
DiffScale diff_scale(const FoldedStacks& stacks, bool normalize);

// A frame's change in [-1, 1]: (after - before) / max(after, before). +1 a frame new in AFTER,
// -1 one gone from it, 0 unchanged, +0.5 doubled, -0.5 halved. The shade of its colour.
double diff_change(double before, double after);

// "#rrggbb": light grey unchanged, towards red as the frame grew, towards blue as it shrank.
void append_diff_fill(std::string& out, double change);

// The change as people read it: "+100.0%", "-25.0%", "0.0%", or "new" when BEFORE had none.
void append_diff_percent(std::string& out, double before, double after);

// A frame's title after its name: " (AFTER UNIT, SHARE%; before B: CHANGE)"; with --normalize
// "before B normalized from RAW". No " (" after the first: the script finds the name by the
// last one.
void append_diff_title(std::string& out, uint64_t after, uint64_t after_total, uint64_t before_raw,
                       const DiffScale& scale, const std::string& count_name);

// A count that may be fractional (a normalized one), to a tenth: "150", "1,506.3".
void append_scaled(std::string& out, double v);

}  // namespace perfprof::flamegraph
