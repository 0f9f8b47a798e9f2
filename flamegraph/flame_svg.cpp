#include "flamegraph/flame_svg.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

#include "flamegraph/flame_diff.h"
#include "flamegraph/svg.h"
#include "flamegraph_js.h"

namespace perfprof::flamegraph {

namespace {

constexpr double kPad = 10;     // left and right margins
constexpr double kTop = 78;     // first frame row, below the title, subtitle and legend
constexpr double kBottom = 34;  // the details line under the frames
constexpr double kFontSize = 12;
constexpr double kCharWidth = 0.59 * kFontSize;  // Verdana's average advance, close enough to cut labels
constexpr uint32_t kNone = UINT32_MAX;
constexpr size_t kChunk = 1 << 16;  // the SVG goes to its sink in pieces of about this size

// One colour range per frame kind (and for the palettes --colors names): a base and the span
// the name's hash moves each channel through, so one function keeps its colour in every graph.
struct Palette {
    const char* name;
    int r, g, b;     // base
    int dr, dg, db;  // span
};
constexpr Palette kPalettes[] = {
    {"user", 225, 70, 35, 30, 90, 35},        // warm red-orange: the program's own code
    {"library", 220, 175, 40, 30, 45, 50},    // gold: shared objects
    {"kernel", 95, 155, 215, 40, 45, 35},     // blue: the kernel
    {"jit", 70, 185, 70, 45, 45, 45},         // green: JIT code
    {"inlined", 70, 195, 195, 40, 35, 35},    // aqua: inlined functions
    {"unknown", 175, 175, 175, 25, 25, 25},   // grey: no mapping, no symbol
    {"fallback", 175, 140, 215, 30, 30, 25},  // lavender: [dso+0x…], a file without that symbol
    {"separator", 205, 205, 205, 0, 0, 0},    // light grey: "-" dividers, interval time frames
    {"off-cpu", 60, 75, 165, 35, 40, 50},     // indigo: time off the CPU, and the stacks it was spent in
    // --colors palettes for every frame
    {"hot", 205, 0, 0, 50, 230, 55},
    {"mem", 0, 190, 50, 0, 60, 60},
    {"io", 80, 80, 190, 55, 55, 65},
    {"red", 200, 50, 50, 55, 80, 80},
    {"green", 50, 200, 50, 60, 55, 60},
    {"blue", 80, 80, 205, 60, 60, 50},
    {"aqua", 50, 200, 200, 60, 55, 55},
    {"yellow", 175, 175, 50, 55, 55, 20},
    {"purple", 190, 80, 190, 65, 60, 65},
    {"orange", 190, 90, 0, 65, 65, 0},
};
constexpr size_t kOffCpuPalette = 8;
constexpr size_t kFirstOverride = 9;  // kPalettes[9..]: the --colors choices besides "kind"

const Palette& palette_of(FrameKind k) {
    switch (k) {
        case FrameKind::User:
            return kPalettes[0];
        case FrameKind::Library:
            return kPalettes[1];
        case FrameKind::Kernel:
            return kPalettes[2];
        case FrameKind::Jit:
            return kPalettes[3];
        case FrameKind::Inlined:
            return kPalettes[4];
        case FrameKind::Unknown:
            return kPalettes[5];
        case FrameKind::Fallback:
            return kPalettes[6];
        case FrameKind::OffCpu:
            return kPalettes[kOffCpuPalette];
        case FrameKind::Separator:
            break;
    }
    return kPalettes[7];
}

const char* kind_label(FrameKind k) {
    switch (k) {
        case FrameKind::User:
            return "user code";
        case FrameKind::Library:
            return "library";
        case FrameKind::Kernel:
            return "kernel";
        case FrameKind::Jit:
            return "JIT";
        case FrameKind::Inlined:
            return "inlined";
        case FrameKind::Unknown:
            return "unknown";
        case FrameKind::Fallback:
            return "[dso+0x…] no symbol";
        case FrameKind::OffCpu:
            return "off-CPU";
        case FrameKind::Separator:
            break;
    }
    return "separator";
}

// FNV-1a of the name, mixed so that names differing in one letter get unrelated shades, then
// three 16-bit pieces of it as channel shades.
void shades(std::string_view name, double v[3]) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : name) {
        h ^= c;
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    for (int i = 0; i < 3; i++) v[i] = double((h >> (8 + 16 * i)) & 0xffff) / 65535.0;
}

void append_colour(std::string& out, const Palette& p, std::string_view name) {
    double v[3];
    shades(name, v);
    char buf[16];
    const int r = p.r + int(p.dr * v[0]), g = p.g + int(p.dg * v[1]), b = p.b + int(p.db * v[2]);
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", std::min(r, 255), std::min(g, 255), std::min(b, 255));
    out += buf;
}

// A label that fits `width` pixels: the name, or its start and "..", or nothing.
std::string_view fit_label(std::string_view name, double width, bool& cut) {
    cut = false;
    const double chars = (width - 6) / kCharWidth;
    if (chars < 3) return {};
    if (double(name.size()) <= chars) return name;
    size_t n = size_t(chars) - 2;
    // Never cut a UTF-8 sequence in two.
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xc0) == 0x80) n--;
    cut = true;
    return name.substr(0, n);
}

// The stacks in tree order: sorted by their frames' names (ties by frame id, so that names
// differing only in annotation stay apart), a stack before the longer ones it is a prefix of.
// A frame of the merged tree is then a run of consecutive stacks sharing its path: it starts
// after the counts of the stacks before the run and is as wide as the run's counts. The tree
// is walked on the sorted stacks and never built: a node per frame would cost more than the
// stacks themselves (millions of frames from 300k stacks).
class TreeOrder {
public:
    TreeOrder(const FoldedStacks& stacks, bool reverse) : stacks_(stacks), reverse_(reverse) {
        const size_t names = stacks.name_count();
        std::vector<uint32_t> by_name(names);
        std::iota(by_name.begin(), by_name.end(), 0u);
        std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
            const int c = stacks.name(a).compare(stacks.name(b));
            return c != 0 ? c < 0 : a < b;
        });
        std::vector<uint32_t> rank(names);
        for (uint32_t i = 0; i < names; i++) rank[by_name[i]] = i;
        order_.resize(stacks.size());
        std::iota(order_.begin(), order_.end(), 0u);
        std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
            const auto fa = stacks.frames(a), fb = stacks.frames(b);
            const size_t n = std::min(fa.size(), fb.size());
            for (size_t d = 0; d < n; d++) {
                const uint32_t ra = rank[reverse_ ? fa[fa.size() - 1 - d] : fa[d]];
                const uint32_t rb = rank[reverse_ ? fb[fb.size() - 1 - d] : fb[d]];
                if (ra != rb) return ra < rb;
            }
            return fa.size() < fb.size();
        });
        before_.resize(order_.size() + 1);
        for (size_t i = 0; i < order_.size(); i++) before_[i + 1] = before_[i] + stacks.count(order_[i]);
        if (stacks.differential()) {
            was_.resize(order_.size() + 1);
            for (size_t i = 0; i < order_.size(); i++) was_[i + 1] = was_[i] + stacks.before(order_[i]);
        }
    }
    size_t size() const { return order_.size(); }
    size_t depth(size_t i) const { return stacks_.frames(order_[i]).size(); }
    // Whether one of the i-th stack's first `d` frames is an off-CPU marker: its frame at depth
    // d + 1 is off-CPU time.
    bool off_cpu_below(size_t i, size_t d) const {
        for (size_t k = 0; k < d; k++)
            if (stacks_.kind(frame(i, k)) == FrameKind::OffCpu) return true;
        return false;
    }
    // The name id of the i-th stack's frame at depth d + 1 (d < depth(i)).
    uint32_t frame(size_t i, size_t d) const {
        const auto f = stacks_.frames(order_[i]);
        return reverse_ ? f[f.size() - 1 - d] : f[d];
    }
    // The counts of the stacks before the i-th.
    uint64_t before(size_t i) const { return before_[i]; }
    // Differential: the BEFORE counts of stacks [i, j).
    uint64_t was(size_t i, size_t j) const { return was_.empty() ? 0 : was_[j] - was_[i]; }

private:
    const FoldedStacks& stacks_;
    bool reverse_;
    std::vector<uint32_t> order_;
    std::vector<uint64_t> before_;
    std::vector<uint64_t> was_;  // prefix sums of the before counts, for a differential set
};

// A frame to draw: a node of the tree, or a merge of narrow siblings.
struct Drawn {
    uint32_t name;  // kNone for the root and for a merge
    uint32_t depth;
    uint64_t start, count;
    uint32_t merged;  // siblings in a merge
    bool off_cpu;     // above an off-CPU marker
    uint64_t was;     // differential: its count in BEFORE
};

// Differential: a frame only BEFORE had (no after count), under a drawn frame.
struct Gone {
    uint32_t name, parent;  // parent kNone: the root
    uint64_t was;
};

// Calls `draw` with the frames at least `min_count` wide in pre-order, narrow siblings side by
// side merged: a node, the merges among its children, then its wide children's subtrees; and
// `gone` with each child of a drawn frame that has no count (only BEFORE had it).
template <class Draw, class Lost>
void walk_frames(const TreeOrder& t, double min_count, Draw&& draw, Lost&& gone) {
    struct Run {
        size_t begin, end;  // its stacks
        uint32_t depth;
    };
    std::vector<Run> todo{{0, t.size(), 0}}, wide;
    while (!todo.empty()) {
        const Run n = todo.back();
        todo.pop_back();
        const uint32_t name = n.depth ? t.frame(n.begin, n.depth - 1) : kNone;
        draw(Drawn{name, n.depth, t.before(n.begin), t.before(n.end) - t.before(n.begin), 0,
                   n.depth > 1 && t.off_cpu_below(n.begin, n.depth - 1), t.was(n.begin, n.end)});
        // Children in order: wide ones are drawn (their own children later), runs of narrow
        // ones become one merge frame if the run is wide enough.
        wide.clear();
        Drawn run{kNone, n.depth + 1, 0, 0, 0, false, 0};
        auto close_run = [&] {
            // A lone narrow frame is dropped: its parent still counts its samples.
            if (run.merged >= 2 && double(run.count) >= min_count) draw(run);
            run.merged = 0;
            run.count = 0;
            run.was = 0;
        };
        size_t i = n.begin;
        while (i < n.end && t.depth(i) == n.depth) i++;  // the stacks that end here come first
        while (i < n.end) {
            const uint32_t id = t.frame(i, n.depth);
            size_t j = i + 1;
            while (j < n.end && t.frame(j, n.depth) == id) j++;
            const uint64_t count = t.before(j) - t.before(i);
            if (count == 0) {
                gone(Gone{id, name, t.was(i, j)});
            } else if (double(count) >= min_count) {
                close_run();
                wide.push_back({i, j, n.depth + 1});
            } else {
                if (run.merged == 0) run.start = t.before(i);
                run.merged++;
                run.count += count;
                run.was += t.was(i, j);
            }
            i = j;
        }
        close_run();
        // Order among frames does not matter to the picture: wide children are drawn after the
        // merges beside them, the first one first.
        todo.insert(todo.end(), wide.rbegin(), wide.rend());
    }
}

}  // namespace

const char* palette_names() {
    return "kind,hot,mem,io,red,green,blue,aqua,yellow,purple,orange";
}

bool valid_palette(const std::string& name) {
    if (name == "kind") return true;
    for (size_t i = kFirstOverride; i < std::size(kPalettes); i++)
        if (name == kPalettes[i].name) return true;
    return false;
}

namespace {

// The layout's data-* attributes (everything the script needs to know about it, in one place),
// the background, the title and subtitle, the controls and the details lines.
void append_heading(std::string& out, const FlameOptions& opt, const FoldedStacks& stacks,
                    const DiffScale& scale, uint32_t max_depth, int height) {
    const uint64_t total = stacks.total();
    const double fh = opt.frame_height;
    out += "<g id=\"fg\" data-total=\"";
    append_uint(out, total);
    out += "\" data-width=\"";
    append_int(out, opt.width);
    out += "\" data-pad=\"";
    append_int(out, int(kPad));
    out += "\" data-top=\"";
    append_int(out, int(kTop));
    out += "\" data-fh=\"";
    append_int(out, int(fh));
    out += "\" data-depth=\"";
    append_int(out, int(max_depth));
    out += "\" data-inverted=\"";
    out += opt.inverted ? '1' : '0';
    out += "\" data-unit=\"";
    append_escaped(out, opt.count_name);
    if (stacks.differential()) out += "\" data-diff=\"1";
    out += "\">\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fafaf5\"/>\n";

    const double mid = opt.width / 2.0;
    out += "<text id=\"title\" x=\"";
    append_fixed(out, mid);
    out += "\" y=\"24\">";
    append_escaped(out, opt.title);
    out += "</text>\n";
    // The subtitle says how much the picture holds: what was profiled, then the counts.
    out += "<text id=\"subtitle\" x=\"";
    append_fixed(out, mid);
    out += "\" y=\"42\">";
    if (!opt.subtitle.empty()) {
        append_escaped(out, opt.subtitle);
        out += "  \u00b7  ";
    }
    append_grouped(out, total);
    out += ' ';
    append_escaped(out, opt.count_name);
    if (stacks.differential()) {
        out += " after, ";
        append_grouped(out, stacks.before_total());
        out += " before";
        if (scale.normalized) {
            out += " (normalized \u00d7";
            append_fixed(out, scale.factor, 3);
            out += ')';
        }
    }
    out += "</text>\n";
    out += "<text id=\"reset\" class=\"ui\" x=\"10\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n";
    out += "<text id=\"search\" class=\"ui\" x=\"";
    append_fixed(out, opt.width - kPad);
    out += "\" y=\"24\" text-anchor=\"end\">Search</text>\n";
    out += "<text id=\"flip\" class=\"ui\" x=\"";
    append_fixed(out, opt.width - kPad - 104);  // clear of "Reset Search"
    out += "\" y=\"24\" text-anchor=\"end\">";
    out += opt.inverted ? "Flame" : "Icicle";
    out += "</text>\n";
    out += "<text id=\"details\" x=\"10\" y=\"";
    append_int(out, height - 12);
    out += "\"> </text>\n<text id=\"matched\" x=\"";
    append_fixed(out, opt.width - kPad);
    out += "\" y=\"";
    append_int(out, height - 12);
    out += "\" text-anchor=\"end\"> </text>\n";
}

// The legend: the kinds present (by palette), in a fixed order.
void append_legend(std::string& out, const bool (&present)[kFirstOverride]) {
    out += "<g id=\"legend\">";
    double x = kPad;
    static constexpr FrameKind kOrder[] = {FrameKind::User,     FrameKind::Library, FrameKind::Kernel,
                                           FrameKind::Jit,      FrameKind::Inlined, FrameKind::Unknown,
                                           FrameKind::Fallback, FrameKind::OffCpu};
    for (FrameKind k : kOrder) {
        const Palette& p = palette_of(k);
        if (!present[&p - kPalettes]) continue;
        out += "<rect x=\"";
        append_fixed(out, x);
        out += "\" y=\"53\" width=\"10\" height=\"10\" fill=\"";
        append_colour(out, p, {});
        out += "\"/><text x=\"";
        append_fixed(out, x + 14);
        out += "\" y=\"62\">";
        append_escaped(out, kind_label(k));
        out += "</text>";
        x += 14 + double(std::strlen(kind_label(k))) * 6.6 + 18;
    }
    out += "</g>\n";
}

// The legend of a differential picture: what the colours say.
void append_diff_legend(std::string& out) {
    out += "<g id=\"legend\">";
    double x = kPad;
    static constexpr std::pair<double, const char*> kKeys[] = {{1, "grew (full: new)"},
                                                               {0.5, "doubled"},
                                                               {0, "unchanged"},
                                                               {-0.5, "halved"},
                                                               {-1, "shrank (full: gone)"}};
    for (const auto& [change, label] : kKeys) {
        out += "<rect x=\"";
        append_fixed(out, x);
        out += "\" y=\"53\" width=\"10\" height=\"10\" fill=\"";
        append_diff_fill(out, change);
        out += "\"/><text x=\"";
        append_fixed(out, x + 14);
        out += "\" y=\"62\">";
        out += label;
        out += "</text>";
        x += 14 + double(std::strlen(label)) * 6.6 + 18;
    }
    out += "</g>\n";
}

// What every frame of one picture is drawn with.
struct FrameLayout {
    const FoldedStacks& stacks;
    const FlameOptions& opt;
    const Palette* override;  // --colors: one palette for every frame
    double total, scale, fh;
    uint32_t max_depth;
    const DiffScale* diff;  // differential stacks: how BEFORE compares
};

// One frame: a <g> with its extent (data-s, data-n, data-m), a <title>, its rectangle and the
// label that fits.
void append_frame(std::string& out, const FrameLayout& l, const Drawn& d, std::string& name_buf) {
    const bool root = d.depth == 0;
    std::string_view name;
    const Palette* pal = &kPalettes[7];
    if (d.merged) {
        name_buf = std::to_string(d.merged) + " narrow frames";
        name = name_buf;
    } else if (root) {
        name = "all";
        pal = &kPalettes[5];
    } else {
        const uint32_t id = d.name;
        name = l.stacks.name(id);
        pal = l.override && l.stacks.kind(id) != FrameKind::Separator ? l.override
              : d.off_cpu                                             ? &kPalettes[kOffCpuPalette]
                                                                      : &palette_of(l.stacks.kind(id));
    }
    const double x = kPad + double(d.start) * l.scale, w = double(d.count) * l.scale;
    const double y = l.opt.inverted ? kTop + d.depth * l.fh : kTop + (l.max_depth - d.depth) * l.fh;
    out += "<g data-s=\"";
    append_uint(out, d.start);
    out += "\" data-n=\"";
    append_uint(out, d.count);
    if (d.merged) {
        out += "\" data-m=\"";
        append_int(out, d.merged);
    }
    out += "\"><title>";
    append_escaped(out, name);
    if (l.diff) {
        append_diff_title(out, d.count, l.stacks.total(), d.was, *l.diff, l.opt.count_name);
    } else {
        out += " (";
        append_grouped(out, d.count);
        out += ' ';
        append_escaped(out, l.opt.count_name);
        out += ", ";
        append_fixed(out, l.total > 0 ? 100.0 * double(d.count) / l.total : 0, 2);
        out += "%)";
    }
    out += "</title><rect x=\"";
    append_fixed(out, x);
    out += "\" y=\"";
    append_fixed(out, y);
    out += "\" width=\"";
    append_fixed(out, w, w < 1 ? 4 : 2);
    out += "\" height=\"";
    append_fixed(out, l.fh - 1);
    out += "\" fill=\"";
    if (l.diff)
        append_diff_fill(out, diff_change(double(d.was) * l.diff->factor, double(d.count)));
    else if (d.merged)
        out += "#e4e4e4";
    else
        append_colour(out, *pal, name);
    out += "\"/>";
    bool cut = false;
    const std::string_view label = fit_label(name, w, cut);
    if (!label.empty()) {
        out += "<text x=\"";
        append_fixed(out, x + 3);
        out += "\" y=\"";
        append_fixed(out, y + l.fh - 4.5);
        out += "\">";
        append_escaped(out, label);
        if (cut) out += "..";
        out += "</text>";
    }
    out += "</g>\n";
}

constexpr size_t kGoneShown = 10;  // lines of the gone list; the rest are summed in one more
constexpr double kGoneLine = 16;

// Under a differential picture: the frames only BEFORE had, the widest first.
void append_gone(std::string& out, const FoldedStacks& stacks, std::vector<Gone>& gone,
                 const DiffScale& scale, const std::string& count_name, double y) {
    if (gone.empty()) return;
    std::stable_sort(gone.begin(), gone.end(), [](const Gone& a, const Gone& b) { return a.was > b.was; });
    out += "<g id=\"gone\"><text x=\"10\" y=\"";
    append_fixed(out, y);
    out += "\">Gone: frames only BEFORE had (not drawn; their parents' before counts hold them)</text>\n";
    auto before = [&](uint64_t was) {
        append_scaled(out, double(was) * scale.factor);
        out += ' ';
        append_escaped(out, count_name);
        out += " before";
        if (scale.normalized) {
            out += " normalized from ";
            append_grouped(out, was);
        }
    };
    for (size_t i = 0; i < gone.size() && i < kGoneShown; i++) {
        y += kGoneLine;
        out += "<text class=\"gone\" x=\"20\" y=\"";
        append_fixed(out, y);
        out += "\" data-was=\"";
        append_uint(out, gone[i].was);
        out += "\">";
        append_escaped(out, stacks.name(gone[i].name));
        out += ": ";
        before(gone[i].was);
        out += ", under ";
        append_escaped(out, gone[i].parent == kNone ? std::string_view("all") : stacks.name(gone[i].parent));
        out += "</text>\n";
    }
    if (gone.size() > kGoneShown) {
        uint64_t rest = 0;
        for (size_t i = kGoneShown; i < gone.size(); i++) rest += gone[i].was;
        y += kGoneLine;
        out += "<text class=\"gone\" x=\"20\" y=\"";
        append_fixed(out, y);
        out += "\">and ";
        append_uint(out, gone.size() - kGoneShown);
        out += " more: ";
        before(rest);
        out += "</text>\n";
    }
    out += "</g>\n";
}

}  // namespace

void render_flame_graph(const FoldedStacks& stacks, const FlameOptions& opt, const TextSink& sink,
                        FlameStats* stats) {
    const TreeOrder tree(stacks, opt.reverse);
    const double total = double(stacks.total());
    const double inner = std::max(1.0, double(opt.width) - 2 * kPad);
    const double min_count =
        opt.min_width_percent ? total * opt.min_width / 100 : total * opt.min_width / inner;

    // Two walks: the first for the picture's height and legend, which come before the frames.
    uint32_t max_depth = 0;
    size_t frames = 0, merged = 0;
    bool present[kFirstOverride] = {};  // kinds drawn, by palette
    std::vector<Gone> gone;
    walk_frames(
        tree, min_count,
        [&](const Drawn& d) {
            frames++;
            max_depth = std::max(max_depth, d.depth);
            merged += d.merged != 0;
            if (d.name != kNone)
                present[d.off_cpu ? kOffCpuPalette : size_t(&palette_of(stacks.kind(d.name)) - kPalettes)] =
                    true;
        },
        [&](const Gone& g) { gone.push_back(g); });
    const double fh = opt.frame_height;
    const double frames_end = kTop + (max_depth + 1) * fh;
    const size_t gone_lines = gone.empty() ? 0 : 1 + std::min(gone.size(), kGoneShown + 1);
    const int height = int(frames_end + double(gone_lines) * kGoneLine + (gone_lines ? 8 : 0) + kBottom);
    if (stats) *stats = {frames, merged, int(max_depth + 1), gone.size()};
    const DiffScale scale = diff_scale(stacks, opt.normalize);

    const Palette* override = nullptr;
    for (size_t i = kFirstOverride; i < std::size(kPalettes); i++)
        if (opt.colors == kPalettes[i].name) override = &kPalettes[i];

    std::string out;
    out.reserve(kChunk + 4096);
    begin_document(out, opt.width, height,
                   "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: #000; }\n"
                   "#title { font-size: 17px; text-anchor: middle; }\n"
                   "#subtitle { fill: #555; text-anchor: middle; }\n"
                   ".ui { cursor: pointer; fill: #333; }\n"
                   ".ui:hover { fill: #c00; }\n"
                   "#frames g { cursor: pointer; }\n"
                   "#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
                   "#frames text { pointer-events: none; }\n"
                   "#frames g.p rect { opacity: 0.5; }\n"
                   "#frames g.h { display: none; }\n"
                   "#frames rect.m { fill: #e040e0; }\n"
                   "#legend rect { stroke: #888; stroke-width: 0.5; }\n");
    append_heading(out, opt, stacks, scale, max_depth, height);

    if (stacks.differential())
        append_diff_legend(out);
    else if (!override)
        append_legend(out, present);

    out += "<g id=\"frames\">\n";
    const FrameLayout layout{stacks,
                             opt,
                             override,
                             total,
                             inner / (total > 0 ? total : 1),
                             fh,
                             max_depth,
                             stacks.differential() ? &scale : nullptr};
    std::string name_buf;
    walk_frames(
        tree, min_count,
        [&](const Drawn& d) {
            append_frame(out, layout, d, name_buf);
            if (out.size() >= kChunk) {
                sink(out);
                out.clear();
            }
        },
        [](const Gone&) {});
    out += "</g>\n";
    append_gone(out, stacks, gone, scale, opt.count_name, frames_end + kGoneLine);
    out += "</g>\n";
    append_script(out, k_flamegraph_js);
    end_document(out);
    sink(out);
}

std::string render_flame_graph(const FoldedStacks& stacks, const FlameOptions& opt, FlameStats* stats) {
    std::string svg;
    render_flame_graph(
        stacks, opt, [&](std::string_view piece) { svg.append(piece); }, stats);
    return svg;
}

}  // namespace perfprof::flamegraph
