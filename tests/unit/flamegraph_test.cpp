// The flame-graph renderer's pure parts: folded parsing, frame kinds, the SVG primitives, the
// tree layout and the merging of narrow frames.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <fstream>
#include <regex>
#include <string>

#include "flamegraph/flame_svg.h"
#include "flamegraph/folded.h"
#include "flamegraph/svg.h"

using namespace perfprof::flamegraph;

namespace {

std::string escaped(std::string_view s) {
    std::string out;
    append_escaped(out, s);
    return out;
}

std::string fixed(double v, int decimals = 2) {
    std::string out;
    append_fixed(out, v, decimals);
    return out;
}

// The frames of a rendered SVG: "start count name" per <g>, in document order.
std::vector<std::string> frames_of(const std::string& svg) {
    std::vector<std::string> out;
    static const std::regex g(R"re(<g data-s="(\d+)" data-n="(\d+)"(?: data-m="\d+")?><title>(.*?) \()re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), g); it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1].str() + " " + (*it)[2].str() + " " + (*it)[3].str());
    return out;
}

}  // namespace

TEST(Folded, ParsesLinesAndCounts) {
    FoldedStacks s;
    const ParseReport r = parse_folded("a;b;c 3\r\na;b 2\n\nx 1\na;b;c 4\n", s);
    EXPECT_EQ(r.lines, 4u);
    EXPECT_EQ(r.bad, 0u);
    EXPECT_EQ(s.total(), 10u);
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s.frames(0).size(), 3u);
    EXPECT_EQ(s.name(s.frames(0)[2]), "c");
    EXPECT_EQ(s.name(s.frames(1)[1]), "b");
    EXPECT_EQ(s.frames(1).size(), 2u);
    EXPECT_EQ(s.count(1), 2u);
    // Interned: the same frame text is one id.
    EXPECT_TRUE(std::ranges::equal(s.frames(0), s.frames(3)));
}

TEST(Folded, ReportsTheFirstBadLineAndKeepsTheRest) {
    FoldedStacks s;
    const ParseReport r =
        parse_folded("a 1\nno-count\nb 2\nc -4\nd 1.5\ne 99999999999999999999999\n;; 3\n", s);
    EXPECT_EQ(r.lines, 2u);
    EXPECT_EQ(r.bad, 5u);
    EXPECT_EQ(r.first_bad, 2u);
    EXPECT_EQ(r.why, "no count after the stack");
    EXPECT_EQ(s.total(), 3u);
}

TEST(Folded, DifferentialPairsDrawTheSecondCount) {
    FoldedStacks s;
    parse_folded("a;b 10 25\n", s);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s.count(0), 25u);
    EXPECT_EQ(s.frames(0).size(), 2u);
}

TEST(Folded, AnnotationsAndNamesGiveKinds) {
    FoldedStacks s;
    s.set_kind("malloc", FrameKind::Library);
    parse_folded(
        "p;main;malloc;write_[k];Interp_[j];inl_[i];[unknown];[/lib/x.so+0x12];-;2026-11-24;10:00:00 1\n", s);
    const auto f = s.frames(0);
    ASSERT_EQ(f.size(), 11u);
    EXPECT_EQ(s.kind(f[0]), FrameKind::User);
    EXPECT_EQ(s.kind(f[2]), FrameKind::Library);
    EXPECT_EQ(s.name(f[3]), "write");
    EXPECT_EQ(s.kind(f[3]), FrameKind::Kernel);
    EXPECT_EQ(s.kind(f[4]), FrameKind::Jit);
    EXPECT_EQ(s.kind(f[5]), FrameKind::Inlined);
    EXPECT_EQ(s.kind(f[6]), FrameKind::Unknown);
    EXPECT_EQ(s.kind(f[7]), FrameKind::Fallback);
    EXPECT_EQ(s.kind(f[8]), FrameKind::Separator);
    EXPECT_EQ(s.kind(f[9]), FrameKind::Separator);
    EXPECT_EQ(s.kind(f[10]), FrameKind::Separator);
}

TEST(Folded, KindAnnotationsReadBackAsTheirKind) {
    for (FrameKind k : {FrameKind::Kernel, FrameKind::Jit, FrameKind::Inlined, FrameKind::Library}) {
        FoldedStacks s;
        s.add("p;f" + std::string(kind_annotation(k)), 1);
        EXPECT_EQ(s.kind(s.frames(0)[1]), k) << kind_annotation(k);
        EXPECT_EQ(s.name(s.frames(0)[1]), "f");
    }
    EXPECT_EQ(kind_annotation(FrameKind::User), "");
    EXPECT_EQ(kind_annotation(FrameKind::Unknown), "");  // "[unknown]" says it by itself
}

TEST(Folded, AnnotatedAndPlainNamesStayApart) {
    FoldedStacks s;
    parse_folded("p;memcpy 1\np;memcpy_[k] 1\n", s);
    EXPECT_NE(s.frames(0)[1], s.frames(1)[1]);
    EXPECT_EQ(s.name(s.frames(1)[1]), "memcpy");
}

TEST(Folded, PiecesOfAnySizeReadAsTheWhole) {
    const std::string text = "a;b;c 3\r\na;b 2\n\nbad\nx 1\na;b;c 4\nlast 7";
    FoldedStacks whole;
    const ParseReport w = parse_folded(text, whole);
    for (size_t piece = 1; piece <= text.size(); piece++) {
        FoldedStacks s;
        FoldedReader reader(s);
        for (size_t pos = 0; pos < text.size(); pos += piece)
            reader.feed(std::string_view(text).substr(pos, piece));
        const ParseReport r = reader.finish();
        EXPECT_EQ(r.lines, w.lines) << piece;
        EXPECT_EQ(r.bad, 1u) << piece;
        EXPECT_EQ(r.first_bad, 4u) << piece;
        ASSERT_EQ(s.size(), whole.size()) << piece;
        EXPECT_EQ(s.total(), 17u) << piece;
        for (size_t i = 0; i < s.size(); i++) {
            EXPECT_EQ(s.count(i), whole.count(i));
            ASSERT_EQ(s.frames(i).size(), whole.frames(i).size()) << piece << " " << i;
            for (size_t f = 0; f < s.frames(i).size(); f++)
                EXPECT_EQ(s.name(s.frames(i)[f]), whole.name(whole.frames(i)[f])) << piece;
        }
    }
}

TEST(Svg, EscapesMarkupAndBadBytes) {
    EXPECT_EQ(escaped("std::map<int, X&>::f(\"a\", 'b')"),
              "std::map&lt;int, X&amp;&gt;::f(&quot;a&quot;, &apos;b&apos;)");
    EXPECT_EQ(escaped("caf\xc3\xa9 \xe6\xbc\xa2"), "caf\xc3\xa9 \xe6\xbc\xa2");  // UTF-8 kept
    EXPECT_EQ(escaped("a\x01z\xff\xc3"), "a?z??");                               // control, invalid, cut
    // Lead bytes past U+10FFFF, surrogates, overlong forms: not UTF-8, one '?' a byte.
    EXPECT_EQ(escaped("\xf5\x80\x80"), "???");
    EXPECT_EQ(escaped("\xed\xa0\x80"), "???");
    EXPECT_EQ(escaped("\xe0\x80\xaf"), "???");
}

TEST(Svg, NumbersIgnoreTheLocale) {
    std::setlocale(LC_NUMERIC, "de_DE.UTF-8");  // a comma locale, where installed
    EXPECT_EQ(fixed(1.5), "1.5");
    EXPECT_EQ(fixed(10.0), "10");
    EXPECT_EQ(fixed(0.12345, 4), "0.1235");
    EXPECT_EQ(fixed(-0.0001), "0");
    EXPECT_EQ(fixed(1e300 * 1e300), "0");
    std::setlocale(LC_NUMERIC, "C");
}

TEST(FlameSvg, LaysOutSortedPrefixTree) {
    FoldedStacks s;
    parse_folded("m;z 2\nm;a;x 3\nm 1\nm;a 4\n", s);
    FlameOptions o;
    o.min_width = 0;
    FlameStats st;
    const std::string svg = render_flame_graph(s, o, &st);
    // Root; m; children sorted by name, each after the self part of its parent; counts summed.
    const std::vector<std::string> want{"0 10 all", "0 10 m", "1 7 a", "5 3 x", "8 2 z"};
    auto got = frames_of(svg);
    std::sort(got.begin(), got.end(), [](const std::string& a, const std::string& b) {
        return std::stoul(a) != std::stoul(b) ? std::stoul(a) < std::stoul(b) : a.size() > b.size();
    });
    EXPECT_EQ(frames_of(svg).size(), 5u);
    EXPECT_EQ(st.frames, 5u);
    EXPECT_EQ(st.depth, 4);
    for (const std::string& w : want) EXPECT_NE(std::find(got.begin(), got.end(), w), got.end()) << w;
}

TEST(FlameSvg, RepeatedStacksAndPrefixesAddUp) {
    FoldedStacks s;
    parse_folded("a;b 1\nc 5\na 1\na;b 2\na;b;d 3\n", s);
    FlameOptions o;
    o.min_width = 0;
    const std::vector<std::string> want{"0 12 all", "0 7 a", "1 6 b", "4 3 d", "7 5 c"};
    EXPECT_EQ(frames_of(render_flame_graph(s, o)), want);  // pre-order
    o.reverse = true;
    const std::vector<std::string> reversed{"0 12 all", "0 1 a", "1 3 b", "1 3 a",
                                            "4 5 c",    "9 3 d", "9 3 b", "9 3 a"};
    EXPECT_EQ(frames_of(render_flame_graph(s, o)), reversed);
}

TEST(FlameSvg, MergesNarrowSiblingsAndDropsLoneOnes) {
    FoldedStacks s;
    // 1000 samples on `big`; 10 small siblings of one sample each: at 1180 px inner width a
    // sample is 1.18 px, so with a 2 px minimum each is narrow, but the run of them is wide.
    std::string text = "p;big 1000\n";
    for (int i = 0; i < 10; i++) text += "p;small" + std::to_string(i) + ";deeper 1\n";
    text += "q 1\n";  // a lone narrow frame beside p
    parse_folded(text, s);
    FlameOptions o;
    o.min_width = 2;
    FlameStats st;
    const auto frames = frames_of(render_flame_graph(s, o, &st));
    EXPECT_EQ(st.merged, 1u);
    EXPECT_NE(std::find(frames.begin(), frames.end(), "1000 10 10 narrow frames"), frames.end());
    for (const std::string& f : frames) {
        EXPECT_EQ(f.find("deeper"), std::string::npos) << f;  // under a merge: not drawn
        EXPECT_EQ(f.find(" q"), std::string::npos) << f;      // lone and narrow: dropped
    }
    EXPECT_EQ(frames.front(), "0 1011 all");  // the counts still add up
    EXPECT_EQ(st.depth, 3);                   // pruned levels take no height
}

TEST(FlameSvg, MinWidthInPercent) {
    FoldedStacks s;
    parse_folded("a 99\nb 1\n", s);
    FlameOptions o;
    o.min_width = 2;
    o.min_width_percent = true;
    EXPECT_EQ(frames_of(render_flame_graph(s, o)).size(), 2u);  // all, a
    o.min_width = 1;
    EXPECT_EQ(frames_of(render_flame_graph(s, o)).size(), 3u);
}

TEST(FlameSvg, ReverseMergesFromTheLeaves) {
    FoldedStacks s;
    parse_folded("m;f;leaf 2\nm;g;leaf 3\n", s);
    FlameOptions o;
    o.reverse = true;
    o.min_width = 0;
    const auto frames = frames_of(render_flame_graph(s, o));
    EXPECT_NE(std::find(frames.begin(), frames.end(), "0 5 leaf"), frames.end());
}

TEST(FlameSvg, LabelsAreCutToTheirFrame) {
    FoldedStacks s;
    parse_folded("a_very_long_function_name_that_does_not_fit 1\nb 20\n", s);  // 56 px: 7 characters
    const std::string svg = render_flame_graph(s, FlameOptions{});
    EXPECT_NE(svg.find(">a_ver..</text>"), std::string::npos);
}

TEST(FlameSvg, TheSameInputGivesTheSameBytes) {
    FoldedStacks a, b;
    parse_folded("x;y 1\nx;z 2\n", a);
    parse_folded("x;z 2\nx;y 1\n", b);  // line order does not matter
    EXPECT_EQ(render_flame_graph(a, FlameOptions{}), render_flame_graph(b, FlameOptions{}));
}

TEST(FlameSvg, StreamedInPiecesAsWhole) {
    FoldedStacks s;
    std::string text;
    for (int i = 0; i < 3000; i++)
        text += "main;f" + std::to_string(i % 97) + ";g" + std::to_string(i) + " 1\n";
    parse_folded(text, s);
    FlameOptions o;
    o.min_width = 0;
    std::string joined;
    size_t pieces = 0, largest = 0;
    render_flame_graph(s, o, [&](std::string_view piece) {
        joined.append(piece);
        pieces++;
        largest = std::max(largest, piece.size());
    });
    const std::string whole = render_flame_graph(s, o);
    EXPECT_EQ(joined, whole);
    EXPECT_GT(whole.size(), 400000u);
    EXPECT_GT(pieces, 4u);
    EXPECT_LT(largest, whole.size() / 4);  // never held whole
}

TEST(Svg, WriteFileLeavesNothingWhenTheProducerFails) {
    char dir[] = "/tmp/flamegraph_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string path = std::string(dir) + "/out.svg";
    write_file(path, [](const TextSink& sink) {
        sink("<svg>");
        sink("</svg>\n");
    });
    EXPECT_THROW(write_file(path,
                            [](const TextSink& sink) {
                                sink("half a pic");
                                throw std::runtime_error("no more");
                            }),
                 std::runtime_error);
    std::ifstream in(path);
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got, "<svg></svg>\n");  // the old picture stays, whole
    EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);
    std::remove(path.c_str());
    rmdir(dir);
}

TEST(FlameSvg, PalettesAreKnown) {
    EXPECT_TRUE(valid_palette("kind"));
    EXPECT_TRUE(valid_palette("mem"));
    EXPECT_FALSE(valid_palette("user"));  // a kind's colours, not a --colors choice
    EXPECT_FALSE(valid_palette(""));
}

TEST(FlameSvg, OffCpuStacksAreColouredApart) {
    FoldedStacks s;
    parse_folded("p;[off-cpu: S];main;nap 5\np;main;spin 5\n", s);
    EXPECT_EQ(s.kind(s.frames(0)[1]), FrameKind::OffCpu);
    const std::string svg = render_flame_graph(s, FlameOptions{});
    // name -> fills, in document order.
    std::vector<std::pair<std::string, std::string>> fills;
    static const std::regex g(R"re(<title>(.*?) \([^<]*</title><rect[^>]* fill="#([0-9a-f]{6})")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), g); it != std::sregex_iterator(); ++it)
        fills.emplace_back((*it)[1].str(), (*it)[2].str());
    auto rgb = [](const std::string& hex, int i) { return std::stoi(hex.substr(size_t(2 * i), 2), nullptr, 16); };
    int off_main = 0, on_main = 0;
    for (const auto& [name, hex] : fills) {
        const bool off = name == "[off-cpu: S]" || name == "nap";
        if (off) {
            EXPECT_TRUE(rgb(hex, 2) > rgb(hex, 0) + 60 && rgb(hex, 2) > rgb(hex, 1) + 40) << name << " #" << hex;
        }
        if (name == "spin") {
            EXPECT_GT(rgb(hex, 0), rgb(hex, 2)) << "#" << hex;  // warm: the program's own code
        }
        if (name == "main") {
            // One main above the marker (off-CPU), one on the CPU: drawn apart.
            if (rgb(hex, 2) > rgb(hex, 0))
                off_main++;
            else
                on_main++;
        }
    }
    EXPECT_EQ(off_main, 1);
    EXPECT_EQ(on_main, 1);
    EXPECT_NE(svg.find(">off-CPU</text>"), std::string::npos);  // in the legend
    EXPECT_FALSE(valid_palette("off-cpu"));                      // a kind's colours, not a --colors choice
}
