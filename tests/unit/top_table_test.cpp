// stack::TopTable (pprof -top's flat/cum arithmetic and layout) and stack::TopStacks (chains of
// this process symbolized into it).
#include "stack/top_table.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace perfprof::stack {
namespace {

void add(TopTable& t, std::vector<std::string_view> leaf_first, uint64_t n) {
    t.add(leaf_first, n);
}

TEST(TopTable, FlatIsTheLeafCumIsAnywhere) {
    TopTable t;
    add(t, {"work", "hot_a", "main"}, 30);
    add(t, {"work", "hot_b", "main"}, 10);
    add(t, {"main"}, 2);
    EXPECT_EQ(t.total(), 42u);
    EXPECT_EQ(t.functions(), 4u);
    const auto rows = t.rows();
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].name, "work");
    EXPECT_EQ(rows[0].flat, 40u);
    EXPECT_EQ(rows[0].cum, 40u);
    EXPECT_EQ(rows[1].name, "main");
    EXPECT_EQ(rows[1].flat, 2u);
    EXPECT_EQ(rows[1].cum, 42u);
    // Equal flat (0): the larger cum first.
    EXPECT_EQ(rows[2].name, "hot_a");
    EXPECT_EQ(rows[2].cum, 30u);
    EXPECT_EQ(rows[3].name, "hot_b");
    EXPECT_EQ(rows[3].cum, 10u);
}

TEST(TopTable, RecursionCountsOnceInCum) {
    TopTable t;
    add(t, {"fib", "fib", "fib", "main"}, 5);
    add(t, {"leaf", "fib", "fib", "main"}, 5);
    const auto rows = t.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].name, "fib");
    EXPECT_EQ(rows[0].flat, 5u);
    EXPECT_EQ(rows[0].cum, 10u);  // not 25: each stack once
    for (const auto& r : rows) EXPECT_LE(r.cum, t.total());
}

TEST(TopTable, TiesByName) {
    TopTable t;
    add(t, {"b"}, 3);
    add(t, {"c"}, 3);
    add(t, {"a"}, 3);
    const auto rows = t.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].name, "a");
    EXPECT_EQ(rows[1].name, "b");
    EXPECT_EQ(rows[2].name, "c");
}

TEST(TopTable, EmptyStackCountsInTotalOnly) {
    TopTable t;
    add(t, {}, 4);
    add(t, {"f"}, 4);
    add(t, {"g"}, 0);  // a weight of 0 counts nothing
    EXPECT_EQ(t.total(), 8u);
    EXPECT_EQ(t.functions(), 1u);
}

TEST(TopTable, MergeAndClear) {
    TopTable a, b;
    add(a, {"f", "main"}, 3);
    add(b, {"g", "main"}, 1);
    add(b, {"f", "main"}, 1);
    a.merge(b);
    EXPECT_EQ(a.total(), 5u);
    const auto rows = a.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].name, "f");
    EXPECT_EQ(rows[0].flat, 4u);
    EXPECT_EQ(rows[2].name, "main");
    EXPECT_EQ(rows[2].cum, 5u);
    a.clear();
    EXPECT_EQ(a.total(), 0u);
    EXPECT_TRUE(a.rows().empty());
}

TEST(TopTable, FormatLikePprofTop) {
    TopTable t;
    add(t, {"work", "hot_a", "main"}, 3);
    add(t, {"work", "hot_b", "main"}, 1);
    add(t, {"%s%n", "main"}, 4);  // a name is never a format
    std::string out;
    t.format(out, "profile", "samples", 2);
    EXPECT_EQ(out,
              "profile: 8 samples, top 2 of 5 functions\n"
              "      flat   flat%    sum%        cum    cum%\n"
              "         4  50.00%  50.00%          4  50.00%  %s%n\n"
              "         4  50.00% 100.00%          4  50.00%  work\n");
    out.clear();
    t.format(out, "x", "samples", 100);
    // Every function, the sum reaching 100 %.
    std::istringstream lines(out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) ++n;
    EXPECT_EQ(n, 2 + 5);
    EXPECT_NE(out.find("top 5 of 5 functions"), std::string::npos);
    EXPECT_NE(out.find("         0   0.00% 100.00%          8 100.00%  main\n"), std::string::npos);
}

TEST(TopTable, FormatEmptyAndZeroRows) {
    TopTable t;
    std::string out;
    t.format(out, "profile", "samples", 20);
    EXPECT_EQ(out, "profile: 0 samples, top 0 of 0 functions\n");
    add(t, {"f"}, 1);
    out.clear();
    t.format(out, "profile", "samples", 0);
    EXPECT_EQ(out, "profile: 1 samples, top 0 of 1 function\n");
}

__attribute__((noinline)) void top_table_test_marker() {
    asm volatile("");
}

// Chains of this process: names from its own symbols, the root as the outermost frame, and the
// interval and whole-run tables apart.
TEST(TopStacks, SymbolizesChainsIntoTheTables) {
    sym::Symbolizer symbols;
    Printer printer(symbols, true, true);
    TopStacks top(printer);
    const uint64_t ip = reinterpret_cast<uint64_t>(&top_table_test_marker);
    const uint64_t chain[] = {PERF_CONTEXT_USER, ip};
    const uint32_t pid = uint32_t(::getpid());
    top.add_callchain(chain, 2, pid, "[off-cpu: S]", 3);
    top.add_ip(ip, pid, 1);
    EXPECT_FALSE(top.interval_empty());
    char* buf = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&buf, &size);
    ASSERT_NE(f, nullptr);
    top.print_interval(f, "i1", "samples", 20);
    EXPECT_TRUE(top.interval_empty());
    top.add_ip(ip, pid, 2);
    top.print_total(f, "all", "samples", 20);
    std::fclose(f);
    const std::string out(buf, size);
    std::free(buf);
    EXPECT_NE(out.find("i1: 4 samples, top 2 of 2 functions\n"), std::string::npos) << out;
    EXPECT_NE(out.find("         4 100.00% 100.00%          4 100.00%  "), std::string::npos) << out;
    EXPECT_NE(out.find("top_table_test_marker"), std::string::npos) << out;
    EXPECT_NE(out.find("         0   0.00% 100.00%          3  75.00%  [off-cpu: S]\n"), std::string::npos)
        << out;
    EXPECT_NE(out.find("all: 6 samples, top 2 of 2 functions\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace perfprof::stack
