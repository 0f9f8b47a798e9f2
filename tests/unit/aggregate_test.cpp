// lib/aggregate: KeyTable (rows by key or name, the §P1 order, reuse after clear), print_top
// (the §P1 table, printkey padding), DistTable (the §P11 statistics and table).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "aggregate/dist_table.h"
#include "aggregate/key_table.h"

namespace perfprof::aggregate {
namespace {

// What `f` prints on a FILE.
template <class F>
std::string printed(F f) {
    char* buf = nullptr;
    size_t len = 0;
    FILE* out = open_memstream(&buf, &len);
    f(out);
    std::fclose(out);
    std::string r(buf, len);
    std::free(buf);
    return r;
}

std::vector<uint64_t> keys_in_order(const KeyTable& t) {
    std::vector<uint64_t> k;
    for (uint32_t r : t.rows_in_order()) k.push_back(t.key(r));
    return k;
}

TEST(AggregateKeyTable, RowsByKeySumPerColumn) {
    KeyTable t({{"A"}, {"B"}});
    for (uint64_t i = 0; i < 1000; i++) {
        const uint32_t r = t.row(i % 7);
        t.add(r, 0, 1);
        t.add(r, 1, i);
    }
    ASSERT_EQ(t.size(), 7u);
    uint64_t n = 0, sum = 0;
    for (uint32_t r = 0; r < t.size(); r++) {
        n += t.value(r, 0);
        sum += t.value(r, 1);
        EXPECT_EQ(t.row(t.key(r)), r);  // found again, not added
    }
    EXPECT_EQ(t.size(), 7u);
    EXPECT_EQ(n, 1000u);
    EXPECT_EQ(sum, 999u * 1000 / 2);
}

TEST(AggregateKeyTable, GrowsPastItsSlotsAndFindsEveryKey) {
    KeyTable t({{"N"}});
    for (uint64_t k = 0; k < 5000; k++) t.add(t.row(k * 0x10000), 0, k);
    ASSERT_EQ(t.size(), 5000u);
    for (uint64_t k = 0; k < 5000; k++) EXPECT_EQ(t.value(t.row(k * 0x10000), 0), k);
    EXPECT_EQ(t.size(), 5000u);
}

TEST(AggregateKeyTable, NameIsSetOnceAndKeptAcrossLookups) {
    KeyTable t({{"N"}});
    const uint32_t r = t.row(42);
    EXPECT_FALSE(t.named(r));
    t.set_name(r, "first");
    t.set_name(r, "second");
    EXPECT_EQ(t.name(t.row(42)), "first");
}

TEST(AggregateKeyTable, ByNameRowsAreTheNames) {
    KeyTable t({{"N"}}, KeyTable::Keyed::ByName);
    for (const char* n : {"bash", "sshd", "bash", "a-very-long-task-name-beyond-sso", "bash"})
        t.add(t.row(n), 0, 1);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t.value(t.row("bash"), 0), 3u);
    EXPECT_EQ(t.value(t.row("a-very-long-task-name-beyond-sso"), 0), 1u);
    // Equal counts: by name ascending.
    std::vector<std::string> names;
    for (uint32_t r : t.rows_in_order()) names.emplace_back(t.name(r));
    EXPECT_EQ(names, (std::vector<std::string>{"bash", "a-very-long-task-name-beyond-sso", "sshd"}));
}

TEST(AggregateKeyTable, OrderTopByColumnsThenOthersThenKey) {
    // Columns: an added one, then a sorting one: the sorting one decides first.
    KeyTable t({{"ADD"}, {"BY", true}});
    auto put = [&](uint64_t key, uint64_t add, uint64_t by) {
        const uint32_t r = t.row(key);
        t.add(r, 0, add);
        t.add(r, 1, by);
    };
    put(5, 100, 1);
    put(3, 1, 2);
    put(9, 50, 1);
    put(7, 50, 1);  // ties 9 on both columns: key ascending
    put(1, 1, 2);   // ties 3: key ascending
    EXPECT_EQ(keys_in_order(t), (std::vector<uint64_t>{1, 3, 5, 7, 9}));
    KeyTable plain({{"A"}, {"B"}});
    for (auto [k, a, b] : std::vector<std::array<uint64_t, 3>>{{1, 1, 9}, {2, 2, 0}, {3, 2, 1}}) {
        const uint32_t r = plain.row(k);
        plain.add(r, 0, a);
        plain.add(r, 1, b);
    }
    EXPECT_EQ(keys_in_order(plain), (std::vector<uint64_t>{3, 2, 1}));
}

TEST(AggregateKeyTable, ClearForgetsRowsAndReusesThem) {
    KeyTable t({{"N"}});
    for (uint64_t k = 0; k < 100; k++) t.add(t.row(k), 0, 5);
    t.set_name(t.row(3), "three");
    t.clear();
    EXPECT_TRUE(t.empty());
    const uint32_t r = t.row(77);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.value(r, 0), 0u);  // a reused row starts at zero
    EXPECT_FALSE(t.named(r));
    EXPECT_EQ(t.key(r), 77u);
    EXPECT_EQ(t.rows_in_key_order().size(), 1u);
}

TEST(AggregateKeyTable, KeyOrderForNodes) {
    KeyTable t({{"S0"}, {"S1"}});
    for (uint64_t k : {(1ull << 32) | 1, 0ull, 1ull << 32, 1ull}) t.row(k);
    std::vector<uint64_t> k;
    for (uint32_t r : t.rows_in_key_order()) k.push_back(t.key(r));
    EXPECT_EQ(k, (std::vector<uint64_t>{0, 1, 1ull << 32, (1ull << 32) | 1}));
}

TEST(AggregateTop, TableLayoutAsSpecified) {
    KeyTable t({{"SCHED_SWITCH", false, column_width("SCHED_SWITCH")}, {"RUNTIME", true, 12}});
    uint32_t r = t.row(2831);
    t.add(r, 0, 933);
    t.add(r, 1, 12801931);
    t.set_name(r, "nginx");
    r = t.row(32729);
    t.add(r, 0, 102);
    t.add(r, 1, 6203671);
    t.set_name(r, "sshd");
    TopLayout l;
    l.key_header = "PREV_PID";
    l.key_width = column_width("PREV_PID", 8);
    l.name_header = "PREV_COMM";
    const std::string out = printed([&](FILE* f) { print_top(f, "TITLE", l, t); });
    EXPECT_EQ(out,
              "TITLE\n"
              "PREV_PID SCHED_SWITCH      RUNTIME PREV_COMM\n"
              "    2831          933     12801931 nginx\n"
              "   32729          102      6203671 sshd\n");
}

TEST(AggregateTop, NoNameColumnLeavesTheTrailingSpaceAndEmptyPrintsNothing) {
    KeyTable t({{"IRQ"}});
    TopLayout l;
    l.name_column = false;
    EXPECT_EQ(printed([&](FILE* f) { print_top(f, "T", l, t); }), "");
    t.add(t.row(7), 0, 3);
    EXPECT_EQ(printed([&](FILE* f) { print_top(f, "T", l, t); }),
              "T\n"
              "     PID          IRQ \n"
              "       7            3 \n");
}

TEST(AggregateTop, PrintkeyPadsToTheKeyWidthAndAlwaysOneSpace) {
    KeyTable t({{"N"}});
    t.add(t.row(1), 0, 2);
    t.add(t.row(2), 0, 1);
    TopLayout l;
    l.name_column = false;
    const PrintKey pk = [](uint64_t key, FILE* out) {
        return key == 1 ? std::fprintf(out, "0x1") : std::fprintf(out, "LONG-KEY-TEXT");
    };
    EXPECT_EQ(printed([&](FILE* f) { print_top(f, "T", l, t, &pk); }),
              "T\n"
              "     PID            N \n"
              "0x1      "  // 3 characters, padded to 8, then the cell's space
              "           2 \n"
              "LONG-KEY-TEXT "  // wider than the column: still one space (§P1 Recommendation)
              "           1 \n");
}

TEST(AggregateTop, OnlyCommHidesTheKey) {
    KeyTable t({{"SCHED_WAKEUP"}}, KeyTable::Keyed::ByName);
    t.add(t.row("kworker/0:1"), 0, 4);
    TopLayout l;
    l.key_column = false;
    EXPECT_EQ(printed([&](FILE* f) { print_top(f, "T", l, t); }),
              "T\n"
              "SCHED_WAKEUP COMM\n"
              "           4 kworker/0:1\n");
}

TEST(AggregateTop, TitleHasTheWallClockAndTheCount) {
    const std::string t = top_title(0, 9022);
    // "{WALL} perf-prof - HH:MM:SS  sample N events": WALL is 26 characters.
    ASSERT_GT(t.size(), 27u);
    EXPECT_EQ(t.substr(26, 13), " perf-prof - ");
    EXPECT_EQ(t.substr(47), "  sample 9022 events");
    EXPECT_EQ(upper("runtime/1000"), "RUNTIME/1000");
}

TEST(AggregateDist, StatisticsAreExact) {
    DistTable d({"sys_enter_lseek"}, DistTable::PerInstance::No);
    for (uint64_t v = 0; v < 1000; v++) d.add(int(v % 2), 0, 0, v, 900);
    const output::LatencyDist* n = d.node(0, 0);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->calls, 1000u);
    EXPECT_EQ(n->total, 499500u);
    EXPECT_EQ(n->min, 0u);
    EXPECT_EQ(n->max, 999u);
    EXPECT_EQ(n->over, 99u);
}

TEST(AggregateDist, TableAndP99Truncated) {
    DistTable d({"ev", "longer_event"}, DistTable::PerInstance::No);
    for (uint64_t v = 1; v <= 100; v++) d.add(0, 0, 1, v);
    const std::string out = printed([&](FILE* f) { d.print(f, "WALL"); });
    // p99 of 1..100 interpolates to 99.01: printed 99.
    EXPECT_EQ(out,
              "WALL \n"
              "event           calls            total          min          avg          p99          max\n"
              "------------ -------- ---------------- ------------ ------------ ------------ ------------\n"
              "longer_event      100             5050            1           50           99          100\n");
    EXPECT_TRUE(d.empty());  // printed nodes are removed
    EXPECT_EQ(printed([&](FILE* f) { d.print(f, "WALL"); }), "");
}

TEST(AggregateDist, NameWidthAtLeastFive) {
    DistTable d({"ab"}, DistTable::PerInstance::No);
    d.add(0, 0, 0, 7);
    EXPECT_EQ(printed([&](FILE* f) { d.print(f, "W"); }),
              "W \n"
              "event    calls            total          min          avg          p99          max\n"
              "----- -------- ---------------- ------------ ------------ ------------ ------------\n"
              "   ab        1                7            7            7            7            7\n");
}

TEST(AggregateDist, PerInstanceRowsInInstanceThenEventOrder) {
    DistTable cpu({"a", "b"}, DistTable::PerInstance::Cpu);
    cpu.add(1, 3, 1, 10);
    cpu.add(0, 2, 0, 5);
    cpu.add(1, 3, 0, 20);
    const std::string out = printed([&](FILE* f) { cpu.print(f, "W"); });
    EXPECT_NE(out.find("[CPU] event "), std::string::npos) << out;
    EXPECT_NE(out.find("----- -----"), std::string::npos) << out;
    const size_t a0 = out.find("[002]     a"), a1 = out.find("[003]     a"), b1 = out.find("[003]     b");
    ASSERT_NE(a0, std::string::npos) << out;
    ASSERT_NE(a1, std::string::npos) << out;
    ASSERT_NE(b1, std::string::npos) << out;
    EXPECT_LT(a0, a1);
    EXPECT_LT(a1, b1);

    DistTable th({"a"}, DistTable::PerInstance::Thread);
    th.add(0, 4242, 0, 1);
    const std::string t = printed([&](FILE* f) { th.print(f, "W"); });
    EXPECT_NE(t.find("[THREAD] event "), std::string::npos) << t;
    EXPECT_NE(t.find("-------- -----"), std::string::npos) << t;
    EXPECT_NE(t.find("4242         a"), std::string::npos) << t;
}

}  // namespace
}  // namespace perfprof::aggregate
