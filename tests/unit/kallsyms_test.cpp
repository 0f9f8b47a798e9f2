// Kernel symbol table (SPEC §5.2).
#include "sym/kallsyms.h"
#include "sym/symbolizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

using perfprof::sym::Kallsyms;
using perfprof::sym::Symbolizer;

namespace {

std::string slurp(const char* path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST(Kallsyms, ParsesAndSortsByAddressThenName) {
    Kallsyms k(
        "ffffffff81000200 T zeta\n"
        "ffffffff81000100 t alpha\n"
        "ffffffff81000200 T beta\n"
        "ffffffffc0001000 t mod_fn\t[some_mod]\n"
        "ffffffff81000300 D data_sym\n");
    EXPECT_EQ(k.size(), 5u);
    uint64_t off = 99;
    EXPECT_EQ(k.find(0xffffffff810000ff, &off), nullptr);
    EXPECT_STREQ(k.find(0xffffffff81000100, &off), "alpha");
    EXPECT_EQ(off, 0u);
    EXPECT_STREQ(k.find(0xffffffff810001ff, &off), "alpha");
    EXPECT_EQ(off, 0xffu);
    // Two names at one address: the first in name order.
    EXPECT_STREQ(k.find(0xffffffff81000200, &off), "beta");
    EXPECT_STREQ(k.find(0xffffffff81000250, &off), "beta");
    EXPECT_EQ(off, 0x50u);
    // Every TYPE contributes; no size check above the last symbol.
    EXPECT_STREQ(k.find(0xffffffff81000300), "data_sym");
    EXPECT_STREQ(k.find(0xffffffffc0001000), "mod_fn");  // module column dropped
    EXPECT_STREQ(k.find(UINT64_MAX, &off), "mod_fn");
    EXPECT_EQ(off, UINT64_MAX - 0xffffffffc0001000);
}

TEST(Kallsyms, EdgeCases) {
    EXPECT_EQ(Kallsyms("").size(), 0u);
    EXPECT_EQ(Kallsyms("").find(123), nullptr);
    Kallsyms k(
        "\n"
        "garbage\n"
        "zz T bad_hex\n"
        "1000 T\n"                       // no name
        "11112222333344445 T toolong\n"  // 17 hex digits
        "  2000   t   padded  \r\n"
        "0000000000000000 A zero\n"
        "3000 T last_no_newline");
    EXPECT_EQ(k.size(), 3u);
    EXPECT_STREQ(k.find(0), "zero");
    EXPECT_STREQ(k.find(0x2001), "padded");
    EXPECT_STREQ(k.find(0x3000), "last_no_newline");
}

TEST(Kallsyms, OneTablePerSymbolizer) {
    Symbolizer symbols;
    auto a = symbols.kernel();
    auto b = symbols.kernel();
    ASSERT_TRUE(a);
    EXPECT_EQ(a.get(), b.get());
    Symbolizer other;
    EXPECT_NE(other.kernel().get(), a.get());
}

TEST(Kallsyms, AgainstProcKallsyms) {
    std::string text = slurp("/proc/kallsyms");
    std::multimap<uint64_t, std::string> ref;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string a, t, n;
        if (!(ls >> a >> t >> n)) continue;
        ref.emplace(std::stoull(a, nullptr, 16), n);
    }
    if (ref.empty() || std::prev(ref.end())->first == 0)
        GTEST_SKIP() << "/proc/kallsyms unreadable or addresses hidden (not root)";
    Kallsyms k(text);
    EXPECT_EQ(k.size(), ref.size());
    std::vector<uint64_t> addrs;
    for (auto it = ref.begin(); it != ref.end(); it = ref.upper_bound(it->first)) addrs.push_back(it->first);
    std::mt19937_64 rng(42);
    for (int i = 0; i < 1000; ++i) {
        size_t j = rng() % addrs.size();
        uint64_t a = addrs[j];
        auto range = ref.equal_range(a);
        std::set<std::string> names;
        for (auto it = range.first; it != range.second; ++it) names.insert(it->second);
        uint64_t off = 1;
        const char* n = k.find(a, &off);
        ASSERT_NE(n, nullptr);
        EXPECT_EQ(off, 0u);
        EXPECT_EQ(n, *names.begin()) << std::hex << a;
        if (j + 1 < addrs.size() && addrs[j + 1] == a + 1) continue;
        if (a == UINT64_MAX) continue;
        n = k.find(a + 1, &off);
        ASSERT_NE(n, nullptr);
        EXPECT_EQ(off, 1u);
        EXPECT_EQ(n, *names.begin());
    }
    // Via a table of the running kernel, too.
    auto shared = Kallsyms::running();
    EXPECT_GT(shared->size(), 0u);
}
