// Differential flame graphs: reading two profiles (or one of before/after pairs) into one set,
// the change of a frame, its colour and title words, the picture's frames and its gone list.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "flamegraph/flame_diff.h"
#include "flamegraph/flame_svg.h"
#include "flamegraph/folded.h"

using namespace perfprof::flamegraph;

namespace {

std::string fill(double change) {
    std::string out;
    append_diff_fill(out, change);
    return out;
}

std::string percent(double before, double after) {
    std::string out;
    append_diff_percent(out, before, after);
    return out;
}

// "title|fill" of every frame, in document order.
std::vector<std::string> diff_frames(const std::string& svg) {
    std::vector<std::string> out;
    static const std::regex g(R"re(<title>([^<]*)</title><rect[^>]* fill="(#[0-9a-f]{6})")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), g); it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1].str() + "|" + (*it)[2].str());
    return out;
}

std::vector<std::string> gone_lines(const std::string& svg) {
    std::vector<std::string> out;
    static const std::regex t(R"re(<text class="gone"[^>]*>([^<]*)</text>)re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), t); it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1].str());
    return out;
}

void read_pair(FoldedStacks& s, std::string_view before, std::string_view after) {
    parse_folded(before, s, Feed::Before);
    parse_folded(after, s, Feed::Drawn);
}

}  // namespace

TEST(FlameDiff, ChangeIsRelativeToTheLargerCount) {
    EXPECT_DOUBLE_EQ(diff_change(100, 200), 0.5);
    EXPECT_DOUBLE_EQ(diff_change(200, 100), -0.5);
    EXPECT_DOUBLE_EQ(diff_change(0, 40), 1);
    EXPECT_DOUBLE_EQ(diff_change(40, 0), -1);
    EXPECT_DOUBLE_EQ(diff_change(50, 50), 0);
    EXPECT_DOUBLE_EQ(diff_change(0, 0), 0);
}

TEST(FlameDiff, FillsGoFromGreyToRedOrBlue) {
    EXPECT_EQ(fill(0), "#e8e8e8");
    EXPECT_EQ(fill(1), "#d71e1e");
    EXPECT_EQ(fill(-1), "#1e50d7");
    EXPECT_EQ(fill(5), "#d71e1e");  // capped
    EXPECT_EQ(fill(0.5), "#e08383");
    EXPECT_EQ(fill(-0.5), "#839ce0");
}

TEST(FlameDiff, ScaledCountsToATenth) {
    auto scaled = [](double v) {
        std::string out;
        append_scaled(out, v);
        return out;
    };
    EXPECT_EQ(scaled(150), "150");
    EXPECT_EQ(scaled(149.98), "150");
    EXPECT_EQ(scaled(1506.33), "1,506.3");
    EXPECT_EQ(scaled(0.04), "0");
}

TEST(FlameDiff, PercentIsSignedWithOneDecimal) {
    EXPECT_EQ(percent(100, 200), "+100.0%");
    EXPECT_EQ(percent(100, 50), "-50.0%");
    EXPECT_EQ(percent(3, 1), "-66.7%");
    EXPECT_EQ(percent(100, 100), "0.0%");
    EXPECT_EQ(percent(100000, 100001), "0.0%");  // under 0.05%: unchanged
    EXPECT_EQ(percent(0, 7), "new");
    EXPECT_EQ(percent(7, 0), "-100.0%");
    EXPECT_EQ(percent(151.72, 300), "+97.7%");
}

TEST(FlameDiff, TwoFilesMakeOneDifferentialSet) {
    FoldedStacks s;
    read_pair(s, "m;a 10\nm;gone 5\n", "m;a 30\nm;new 2\n");
    EXPECT_TRUE(s.differential());
    EXPECT_EQ(s.total(), 32u);
    EXPECT_EQ(s.before_total(), 15u);
    ASSERT_EQ(s.size(), 4u);
    // The before stacks come first with no after count; the after stacks have no before count.
    EXPECT_EQ(s.count(0), 0u);
    EXPECT_EQ(s.before(0), 10u);
    EXPECT_EQ(s.count(2), 30u);
    EXPECT_EQ(s.before(2), 0u);
    FoldedStacks plain;
    parse_folded("m;a 1\n", plain);
    EXPECT_FALSE(plain.differential());
    EXPECT_EQ(plain.before(0), 0u);
}

TEST(FlameDiff, PairLines) {
    FoldedStacks s;
    const ParseReport r =
        parse_folded("m;a 10 30\nm;gone 5 0\nm;new 0 2\nm;one 4\nm;zero 0 0\n", s, Feed::Pairs);
    EXPECT_EQ(r.lines, 4u);
    EXPECT_EQ(r.bad, 1u);
    EXPECT_EQ(r.first_bad, 4u);
    EXPECT_EQ(r.why, "expected two counts, before and after");
    EXPECT_EQ(s.size(), 3u);  // the 0/0 line holds nothing
    EXPECT_EQ(s.total(), 32u);
    EXPECT_EQ(s.before_total(), 15u);
}

TEST(FlameDiff, PictureOfAfterWithChangesAndGoneFrames) {
    FoldedStacks s;
    read_pair(s, "p;main;a 100\np;main;b 100\np;main;c 50\np;main;gone1 30\np;gone2;x 10\n",
              "p;main;a 300\np;main;b 50\np;main;c 50\np;main;newf 40\n");
    FlameOptions o;
    o.min_width = 0;
    FlameStats st;
    const std::string svg = render_flame_graph(s, o, &st);
    const std::vector<std::string> want{
        "all (440 samples, 100%; before 290: +51.7%)|#e2a3a3",
        "p (440 samples, 100%; before 290: +51.7%)|#e2a3a3",
        "main (440 samples, 100%; before 280: +57.1%)|#e29f9f",
        "a (300 samples, 68.18%; before 100: +200.0%)|#dd6161",
        "b (50 samples, 11.36%; before 100: -50.0%)|#839ce0",
        "c (50 samples, 11.36%; before 50: 0.0%)|#e8e8e8",
        "newf (40 samples, 9.09%; before 0: new)|#d71e1e",
    };
    EXPECT_EQ(diff_frames(svg), want);
    EXPECT_EQ(st.gone, 2u);
    const std::vector<std::string> gone{"gone1: 30 samples before, under main",
                                        "gone2: 10 samples before, under p"};
    EXPECT_EQ(gone_lines(svg), gone);
    EXPECT_NE(svg.find("data-diff=\"1\""), std::string::npos);
    EXPECT_NE(svg.find(">440 samples after, 290 before</text>"), std::string::npos);

    o.normalize = true;
    const auto norm = diff_frames(render_flame_graph(s, o));
    EXPECT_EQ(norm[0], "all (440 samples, 100%; before 440 normalized from 290: 0.0%)|#e8e8e8");
    EXPECT_EQ(norm[3], "a (300 samples, 68.18%; before 151.7 normalized from 100: +97.7%)|#e08484");
    EXPECT_NE(render_flame_graph(s, o).find("(normalized \u00d71.517)"), std::string::npos);
}

TEST(FlameDiff, NarrowMergesCarryTheirBeforeCounts) {
    FoldedStacks s;
    std::string before, after;
    for (int i = 0; i < 40; i++) {
        before += "m;f" + std::to_string(i) + " 1\n";
        after += "m;f" + std::to_string(i) + " 2\n";
    }
    after += "m;big 100000\n";  // 0.1 px: 8.5 samples; the 40 frames of 2, 80 together
    read_pair(s, before, after);
    FlameOptions o;
    const auto frames = diff_frames(render_flame_graph(s, o));
    ASSERT_EQ(frames.size(), 4u);
    EXPECT_EQ(frames[2], "40 narrow frames (80 samples, 0.08%; before 40: +100.0%)|#e08383");
}

TEST(FlameDiff, ManyGoneFramesAreSummed) {
    FoldedStacks s;
    std::string before;
    for (int i = 0; i < 15; i++) before += "m;g" + std::to_string(i) + " " + std::to_string(100 - i) + "\n";
    read_pair(s, before, "m;kept 5\n");
    FlameOptions o;
    const auto gone = gone_lines(render_flame_graph(s, o));
    ASSERT_EQ(gone.size(), 11u);
    EXPECT_EQ(gone[0], "g0: 100 samples before, under m");
    EXPECT_EQ(gone[9], "g9: 91 samples before, under m");
    EXPECT_EQ(gone[10], "and 5 more: 440 samples before");  // 90 + 89 + 88 + 87 + 86
}

TEST(FlameSvg, SubtitleCarriesTheCount) {
    FoldedStacks s;
    parse_folded("a 1234\nb 1000\n", s);
    FlameOptions o;
    EXPECT_NE(render_flame_graph(s, o).find(">2,234 samples</text>"), std::string::npos);
    o.subtitle = "run";
    o.count_name = "bytes";
    EXPECT_NE(render_flame_graph(s, o).find(">run  \u00b7  2,234 bytes</text>"), std::string::npos);
}

TEST(Folded, LibraryAnnotationAndTruncatedFrames) {
    FoldedStacks s;
    parse_folded("p;malloc_[l];brk_[k];[truncated] 1\n", s);
    ASSERT_EQ(s.name_count(), 4u);
    EXPECT_EQ(s.kind(3), FrameKind::Unknown);  // as stack::Printer::fold says of it
    EXPECT_EQ(s.name(1), "malloc");
    EXPECT_EQ(s.kind(1), FrameKind::Library);
    EXPECT_EQ(s.kind(2), FrameKind::Kernel);
}
