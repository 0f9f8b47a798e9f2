// gperftools' heap profile text: the layout, totals and order, checked against the grammar of
// its two readers (google-pprof's perl regexes and Go pprof's legacy parser, transcribed).
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "output/gperf_heap.h"

using namespace perfprof::output;

namespace {

const char kMaps[] =
    "55d0c0a00000-55d0c0a01000 r-xp 00001000 08:01 1234 /tmp/app\n"
    "7f0000000000-7f0000100000 r-xp 00028000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6\n";

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// google-pprof (ReadHeapProfile)
const std::regex kPerlHeader(
    R"(^heap profile:\s*(\d+):\s+(\d+)\s+\[\s*(\d+):\s+(\d+)\](\s*@\s*([^/]*)(/(\d+))?)?)");
const std::regex kPerlRecord(R"(^\s*(\d+):\s+(\d+)\s+\[\s*(\d+):\s+(\d+)\]\s+@\s+(.*)$)");
// Go's pprof (profile/legacy_profile.go)
const std::regex kGoHeader(
    R"(heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*))");
const std::regex kGoGrowth(R"(heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ growthz?)");
const std::regex kGoRecord(R"((-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*))");

}  // namespace

TEST(GperfHeap, LayoutTotalsAndOrder) {
    std::vector<HeapRecord> r = {
        {1, 100, 5, 500, {0x401234, 0x401000}},
        {3, 3000, 3, 3000, {0x7f0000001234}},
        {0, 0, 2, 64, {0xabc}},
    };
    const std::string text = heap_profile_text(r, 524288, kMaps);
    const std::vector<std::string> l = lines(text);
    ASSERT_EQ(l.size(), 8u);
    EXPECT_EQ(l[0], "heap profile:      4:     3100 [    10:     3564] @ heap_v2/524288");
    EXPECT_EQ(l[1], "     3:     3000 [     3:     3000] @ 0x7f0000001234");
    EXPECT_EQ(l[2], "     1:      100 [     5:      500] @ 0x401234 0x401000");
    EXPECT_EQ(l[3], "     0:        0 [     2:       64] @ 0xabc");
    EXPECT_EQ(l[4], "");
    EXPECT_EQ(l[5], "MAPPED_LIBRARIES:");
    EXPECT_EQ(text.substr(text.find("MAPPED_LIBRARIES:\n") + 18), kMaps);
}

TEST(GperfHeap, ReadersParseEveryLine) {
    std::vector<HeapRecord> r = {{12345678, 123456789012, 99999999, 999999999999, {0xdeadbeef, 0x1}}};
    const std::vector<std::string> l = lines(heap_profile_text(r, 4096, kMaps));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(l[0], m, kPerlHeader));
    EXPECT_EQ(m[1], "12345678");
    EXPECT_EQ(m[4], "999999999999");
    EXPECT_EQ(m[6], "heap_v2");
    EXPECT_EQ(m[8], "4096");
    ASSERT_TRUE(std::regex_search(l[0], m, kGoHeader));
    EXPECT_EQ(m[5], "heap_v2");
    EXPECT_EQ(m[6], "4096");
    EXPECT_FALSE(std::regex_search(l[0], kGoGrowth));
    ASSERT_TRUE(std::regex_search(l[1], m, kPerlRecord));
    EXPECT_EQ(m[2], "123456789012");
    EXPECT_EQ(m[5], "0xdeadbeef 0x1");
    ASSERT_TRUE(std::regex_search(l[1], m, kGoRecord));
    EXPECT_EQ(m[5], " 0xdeadbeef 0x1");
}

TEST(GperfHeap, UnsampledProfileSaysHeapprofile) {
    // rate 0: google-pprof would take a bare `heap_v2` for 1-in-128KiB; `heapprofile` is read
    // as is by both readers.
    const std::vector<std::string> l = lines(heap_profile_text({{1, 8, 1, 8, {0x10}}}, 0, ""));
    EXPECT_EQ(l[0], "heap profile:      1:        8 [     1:        8] @ heapprofile");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(l[0], m, kGoHeader));
    EXPECT_EQ(m[5], "heapprofile");
}

TEST(GperfHeap, EmptyProfile) {
    EXPECT_EQ(heap_profile_text({}, 4096, ""),
              "heap profile:      0:        0 [     0:        0] @ heap_v2/4096\n\nMAPPED_LIBRARIES:\n");
}

TEST(GperfHeap, GrowthHeaderAndPairs) {
    std::vector<GrowthRecord> r = {{2, 8192, {0x10, 0x20}}, {1, 1 << 20, {0x30}}};
    const std::string text = growth_profile_text(r, kMaps);
    const std::vector<std::string> l = lines(text);
    EXPECT_EQ(l[0], "heap profile:      3:  1056768 [     3:  1056768] @ growthz");
    EXPECT_EQ(l[1], "     1:  1048576 [     1:  1048576] @ 0x30");
    EXPECT_EQ(l[2], "     2:     8192 [     2:     8192] @ 0x10 0x20");
    EXPECT_EQ(l[3], "");
    EXPECT_EQ(l[4], "MAPPED_LIBRARIES:");
    // google-pprof takes any header naming "growth" for a growth profile, Go wants `@ growthz?`,
    // and neither may read it as a sampled heap profile.
    EXPECT_NE(l[0].find("growth"), std::string::npos);
    EXPECT_TRUE(std::regex_search(l[0], kGoGrowth));
    EXPECT_FALSE(std::regex_search(l[0], kGoHeader));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(l[0], m, kPerlHeader));
    EXPECT_EQ(m[6], "growthz");
    EXPECT_TRUE(std::regex_search(l[1], kPerlRecord));
}

TEST(GperfHeap, SampleScale) {
    // An allocation of `rate` bytes is kept with probability 1 - 1/e.
    EXPECT_NEAR(heap_sample_scale(1, 4096, 4096), 1 / (1 - std::exp(-1.0)), 1e-12);
    // Averaged over the pair: 10 objects of 1024 bytes.
    EXPECT_NEAR(heap_sample_scale(10, 10240, 4096), 1 / (1 - std::exp(-0.25)), 1e-12);
    // Small allocations stand for about rate/size of them.
    EXPECT_NEAR(heap_sample_scale(1, 16, 512 * 1024), 512 * 1024 / 16.0, 1.0);
    // Huge ones are always kept.
    EXPECT_NEAR(heap_sample_scale(1, 100 << 20, 4096), 1.0, 1e-12);
    EXPECT_EQ(heap_sample_scale(0, 0, 4096), 1.0);
    EXPECT_EQ(heap_sample_scale(3, 0, 4096), 1.0);
    EXPECT_EQ(heap_sample_scale(3, 300, 0), 1.0);
    EXPECT_EQ(heap_sample_scale(3, 300, 1), 1.0);
}
