#include "flamegraph/flame_svg.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

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
constexpr size_t kFirstOverride = 8;  // kPalettes[8..]: the --colors choices besides "kind"

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

void append_count(std::string& out, uint64_t n) {
    // 1234567 → "1,234,567": titles are read by people.
    std::string digits = std::to_string(n);
    for (size_t i = 0; i < digits.size(); i++) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
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

struct Node {
    uint32_t name = kNone;  // kNone: the root
    uint32_t depth = 0;
    uint32_t first_child = kNone, next_sibling = kNone, last_child = kNone;
    uint64_t start = 0, count = 0;
};

// Merges the stacks into a tree: stacks sorted by their frame names (ties by frame id, so that
// names differing only in annotation stay apart), then walked once, each stack reusing the
// path its predecessor left open. Children end up in name order and contiguous.
std::vector<Node> build_tree(const FoldedStacks& stacks, bool reverse) {
    const size_t names = stacks.name_count();
    std::vector<uint32_t> by_name(names);
    std::iota(by_name.begin(), by_name.end(), 0u);
    std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
        const int c = stacks.name(a).compare(stacks.name(b));
        return c != 0 ? c < 0 : a < b;
    });
    std::vector<uint32_t> rank(names);
    for (uint32_t i = 0; i < names; i++) rank[by_name[i]] = i;

    const auto& all = stacks.stacks();
    std::vector<std::vector<uint32_t>> ranked(all.size());
    for (size_t i = 0; i < all.size(); i++) {
        auto& r = ranked[i];
        r.reserve(all[i].frames.size());
        for (uint32_t id : all[i].frames) r.push_back(rank[id]);
        if (reverse) std::reverse(r.begin(), r.end());
    }
    std::vector<uint32_t> order(all.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ranked[a] < ranked[b]; });

    std::vector<Node> nodes(1);
    nodes[0].count = stacks.total();
    std::vector<uint32_t> path;  // open nodes, path[d] at depth d + 1
    uint64_t cursor = 0;
    for (uint32_t i : order) {
        const auto& r = ranked[i];
        size_t common = 0;
        while (common < path.size() && common < r.size() && nodes[path[common]].name == by_name[r[common]])
            common++;
        path.resize(common);
        for (size_t d = common; d < r.size(); d++) {
            const uint32_t parent = d ? path[d - 1] : 0;
            const auto id = static_cast<uint32_t>(nodes.size());
            Node n;
            n.name = by_name[r[d]];
            n.depth = uint32_t(d + 1);
            n.start = cursor;
            nodes.push_back(n);
            Node& p = nodes[parent];
            if (p.last_child == kNone)
                p.first_child = id;
            else
                nodes[p.last_child].next_sibling = id;
            p.last_child = id;
            path.push_back(id);
        }
        for (uint32_t id : path) nodes[id].count += all[i].count;
        cursor += all[i].count;
    }
    return nodes;
}

// A frame to draw: a node, or a merge of narrow siblings.
struct Drawn {
    uint32_t node;  // kNone for a merge
    uint32_t depth;
    uint64_t start, count;
    uint32_t merged;  // siblings in a merge
};

// Pre-order, each frame at least `min_count` wide; narrow siblings side by side merged.
std::vector<Drawn> choose_frames(const std::vector<Node>& nodes, double min_count) {
    std::vector<Drawn> out;
    std::vector<uint32_t> todo{0}, wide;
    out.reserve(nodes.size() < 65536 ? nodes.size() : 65536);
    while (!todo.empty()) {
        const uint32_t id = todo.back();
        todo.pop_back();
        const Node& n = nodes[id];
        out.push_back({id, n.depth, n.start, n.count, 0});
        // Children in order: wide ones are drawn (their own children later), runs of narrow
        // ones become one merge frame if the run is wide enough.
        wide.clear();
        Drawn run{kNone, n.depth + 1, 0, 0, 0};
        auto close_run = [&] {
            // A lone narrow frame is dropped: its parent still counts its samples.
            if (run.merged >= 2 && double(run.count) >= min_count) out.push_back(run);
            run.merged = 0;
            run.count = 0;
        };
        for (uint32_t c = n.first_child; c != kNone; c = nodes[c].next_sibling) {
            if (double(nodes[c].count) >= min_count) {
                close_run();
                wide.push_back(c);
                continue;
            }
            if (run.merged == 0) run.start = nodes[c].start;
            run.merged++;
            run.count += nodes[c].count;
        }
        close_run();
        // Order among frames does not matter to the picture: wide children are drawn after the
        // merges beside them, the first one first.
        todo.insert(todo.end(), wide.rbegin(), wide.rend());
    }
    return out;
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

std::string render_flame_graph(const FoldedStacks& stacks, const FlameOptions& opt, FlameStats* stats) {
    const std::vector<Node> nodes = build_tree(stacks, opt.reverse);
    const double total = double(stacks.total());
    const double inner = std::max(1.0, double(opt.width) - 2 * kPad);
    const double min_count =
        opt.min_width_percent ? total * opt.min_width / 100 : total * opt.min_width / inner;
    const std::vector<Drawn> frames = choose_frames(nodes, min_count);

    uint32_t max_depth = 0;
    size_t merged = 0;
    for (const Drawn& d : frames) {
        max_depth = std::max(max_depth, d.depth);
        merged += d.merged != 0;
    }
    const double fh = opt.frame_height;
    const int height = int(kTop + (max_depth + 1) * fh + kBottom);
    if (stats) *stats = {frames.size(), merged, int(max_depth + 1)};

    const Palette* override = nullptr;
    for (size_t i = kFirstOverride; i < std::size(kPalettes); i++)
        if (opt.colors == kPalettes[i].name) override = &kPalettes[i];

    std::string out;
    out.reserve(4096 + frames.size() * 160);
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
    // Everything the script needs to know about the layout, in one place.
    out += "<g id=\"fg\" data-total=\"";
    append_uint(out, stacks.total());
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
    out += "\">\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fafaf5\"/>\n";

    const double mid = opt.width / 2.0;
    out += "<text id=\"title\" x=\"";
    append_fixed(out, mid);
    out += "\" y=\"24\">";
    append_escaped(out, opt.title);
    out += "</text>\n";
    if (!opt.subtitle.empty()) {
        out += "<text id=\"subtitle\" x=\"";
        append_fixed(out, mid);
        out += "\" y=\"42\">";
        append_escaped(out, opt.subtitle);
        out += "</text>\n";
    }
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

    // The legend: the kinds present, in a fixed order.
    if (!override) {
        bool present[8] = {};
        for (const Drawn& d : frames)
            if (d.node != kNone && nodes[d.node].name != kNone) {
                const FrameKind k = stacks.kind(nodes[d.node].name);
                for (int i = 0; i < 7; i++)
                    if (&palette_of(k) == &kPalettes[i]) present[i] = true;
            }
        out += "<g id=\"legend\">";
        double x = kPad;
        static constexpr FrameKind kOrder[] = {FrameKind::User,    FrameKind::Library, FrameKind::Kernel,
                                               FrameKind::Jit,     FrameKind::Inlined, FrameKind::Unknown,
                                               FrameKind::Fallback};
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

    out += "<g id=\"frames\">\n";
    const double scale = inner / (total > 0 ? total : 1);
    std::string name_buf;
    for (const Drawn& d : frames) {
        const bool root = d.node == 0;
        std::string_view name;
        const Palette* pal = &kPalettes[7];
        if (d.merged) {
            name_buf = std::to_string(d.merged) + " narrow frames";
            name = name_buf;
        } else if (root) {
            name = "all";
            pal = &kPalettes[5];
        } else {
            const uint32_t id = nodes[d.node].name;
            name = stacks.name(id);
            pal =
                override && stacks.kind(id) != FrameKind::Separator ? override : &palette_of(stacks.kind(id));
        }
        const double x = kPad + double(d.start) * scale, w = double(d.count) * scale;
        const double y = opt.inverted ? kTop + d.depth * fh : kTop + (max_depth - d.depth) * fh;
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
        out += " (";
        append_count(out, d.count);
        out += ' ';
        append_escaped(out, opt.count_name);
        out += ", ";
        append_fixed(out, total > 0 ? 100.0 * double(d.count) / total : 0, 2);
        out += "%)</title><rect x=\"";
        append_fixed(out, x);
        out += "\" y=\"";
        append_fixed(out, y);
        out += "\" width=\"";
        append_fixed(out, w, w < 1 ? 4 : 2);
        out += "\" height=\"";
        append_fixed(out, fh - 1);
        out += "\" fill=\"";
        if (d.merged)
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
            append_fixed(out, y + fh - 4.5);
            out += "\">";
            append_escaped(out, label);
            if (cut) out += "..";
            out += "</text>";
        }
        out += "</g>\n";
    }
    out += "</g>\n</g>\n";
    append_script(out, k_flamegraph_js);
    end_document(out);
    return out;
}

}  // namespace perfprof::flamegraph
