// The line head every sample line shares (output/event_line.h), with and without the title a
// parent gives a sample it prints (Sample::title, multi-trace --detail).
#include "output/event_line.h"

#include <gtest/gtest.h>

#include <string>

#include "fake_context.h"

namespace perfprof {
namespace {

const std::string kWall = "2026-11-26 14:00:00.123456";  // WALL(ev)'s 26 columns

unit::FakeContext make_context() {
    return unit::FakeContext(kWall, 2, [](uint32_t tid) { return tid == 42 ? "worker" : "<...>"; });
}

TEST(EventLine, HeadStartsWithWall) {
    unit::FakeContext ctx = make_context();
    std::string line;
    output::append_line_head(ctx, 1000, 42, 1, "d...", 0, line);
    EXPECT_EQ(line.substr(0, 26 + 1 + 16 + 1 + 6), kWall + "           worker     42");
    EXPECT_NE(line.find(" d... [001] "), std::string::npos) << line;
}

TEST(EventLine, TitleReplacesWallAndAddsTheMarkerColumn) {
    unit::FakeContext ctx = make_context();
    std::string plain, titled;
    output::append_line_head(ctx, 1000, 42, 1, "d...", 0, plain);
    output::append_line_head(ctx, 1000, 42, 1, "d...", 0, titled, "|  0.500 us");
    const std::string title = "|  0.500 us" + std::string(26 - 11, ' ');
    EXPECT_EQ(titled, title + "  " + plain.substr(26));
}

TEST(EventLine, TitleKeepsAGivenMarker) {
    unit::FakeContext ctx = make_context();
    std::string marked, titled;
    output::append_line_head(ctx, 1000, 42, UINT32_MAX, "", 'G', marked);
    output::append_line_head(ctx, 1000, 42, UINT32_MAX, "", 'G', titled, "first");
    EXPECT_EQ(titled, "first" + std::string(21, ' ') + marked.substr(26));
    EXPECT_NE(titled.find(" [---] "), std::string::npos) << titled;
}

TEST(EventLine, ALongTitleIsNotCut) {
    unit::FakeContext ctx = make_context();
    std::string line;
    const std::string title(30, 'x');
    output::append_line_head(ctx, 1000, 7, 0, "", 0, line, title);
    EXPECT_EQ(line.substr(0, 30 + 2), title + "  ");
}

}  // namespace
}  // namespace perfprof
