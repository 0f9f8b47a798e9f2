// Text histograms (SPEC §8.2) and the heat-map file writer (§8.1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "output/heatmap_file.h"
#include "output/histogram.h"

using namespace perfprof::output;

TEST(Histogram, Log2Buckets) {
    EXPECT_EQ(log2_bucket(0), 0);
    EXPECT_EQ(log2_bucket(1), 0);
    EXPECT_EQ(log2_bucket(2), 1);
    EXPECT_EQ(log2_bucket(3), 1);
    EXPECT_EQ(log2_bucket(4), 2);
    EXPECT_EQ(log2_bucket(1023), 9);
    EXPECT_EQ(log2_bucket(1024), 10);
    EXPECT_EQ(log2_bucket(UINT64_MAX), 63);
}

TEST(Histogram, Log2TableAsSpecified) {
    Log2Histogram h;
    for (uint64_t v : {0, 1, 1}) h.add(v);
    h.add(2, 30);
    h.add(3, 27);
    h.add(5, 21);
    h.add(9, 2);
    EXPECT_EQ(format_log2(h.buckets(), "usecs"),
              "     usecs               : count    distribution\n"
              "         0 -> 1          : 3        |**                                      |\n"
              "         2 -> 3          : 57       |****************************************|\n"
              "         4 -> 7          : 21       |**************                          |\n"
              "         8 -> 15         : 2        |*                                       |\n");
}

TEST(Histogram, Log2FoldsLeadingEmptyBucketsAndGoesWide) {
    Log2Histogram h;
    h.add(100);  // bucket 6: the first row starts at 0
    EXPECT_EQ(format_log2(h.buckets(), "ns"),
              "     ns                  : count    distribution\n"
              "         0 -> 127        : 1        |****************************************|\n");
    h.add(uint64_t(1) << 40);  // past bucket 32: the wide layout
    const std::string wide = format_log2(h.buckets(), "ns");
    EXPECT_EQ(wide.substr(0, 15 + 29), std::string(15, ' ') + "ns" + std::string(27, ' '));
    EXPECT_NE(wide.find("       1099511627776 -> 2199023255551        : 1        |********************|\n"),
              std::string::npos)
        << wide;
    EXPECT_EQ(format_log2(Log2Histogram().buckets(), "ns"), "");
}

TEST(Histogram, LinearTable) {
    const uint64_t b[] = {0, 4, 0, 8};
    EXPECT_EQ(format_linear(b, 100, 10, "ms"),
              "     ms            : count     distribution\n"
              "        110        : 4        |********************                    |\n"
              "        120        : 0        |                                        |\n"
              "        130        : 8        |****************************************|\n");
}

TEST(HeatmapFile, WritesLinesAndThePictureBeside) {
    char dir[] = "/tmp/pp-heatmap-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string name = std::string(dir) + "/wake";
    {
        std::ofstream(name + ".lat") << "old\n";
        HeatmapFile f(name, "wake-up latency");
        f.write(1000000000, 1500);
        f.write(1000000100, 0);
        f.write(2000000000, 123456789);
        f.close();
        EXPECT_EQ(f.lines(), 3u);
    }
    std::stringstream lat, old;
    lat << std::ifstream(name + ".lat").rdbuf();
    old << std::ifstream(name + ".lat.old").rdbuf();
    EXPECT_EQ(lat.str(), "1000000000 1500\n1000000100 0\n2000000000 123456789\n");
    EXPECT_EQ(old.str(), "old\n");
    std::stringstream svg;
    svg << std::ifstream(name + ".svg").rdbuf();
    EXPECT_NE(svg.str().find("wake-up latency"), std::string::npos);
    EXPECT_NE(svg.str().find("</svg>"), std::string::npos);
    // Nothing written: no picture.
    {
        HeatmapFile f(name + "2", "t");
        f.close();
    }
    EXPECT_NE(::access((name + "2.lat").c_str(), F_OK), -1);
    EXPECT_EQ(::access((name + "2.svg").c_str(), F_OK), -1);
    EXPECT_THROW(HeatmapFile("/nonexistent-dir/x", "t"), std::exception);
    std::filesystem::remove_all(dir);
}
