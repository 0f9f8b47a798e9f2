// profilers/registry.cpp and perf-prof/own_options.h: the single list tells profilers from
// commands, and own-option rows built with OwnOptions<T> store into T.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof {

namespace {

struct DefLine {
    std::string_view name;
    ProfilerInfo::Kind kind;
};

// profilers.def read again, with the kind each line gives.
const std::vector<DefLine> kDef = {
#define PROFILER(name, info) {#name, ProfilerInfo::Kind::Profiler},
#define COMMAND(name, info) {#name, ProfilerInfo::Kind::Command},
#include "profilers/profilers.def"
#undef COMMAND
#undef PROFILER
};

// The def's identifiers spell '-' as '_' (multi_trace for multi-trace).
std::string def_name(std::string_view id) {
    std::string s(id);
    for (char& c : s)
        if (c == '_') c = '-';
    return s;
}

}  // namespace

TEST(Registry, DefKindMatchesEachEntry) {
    const std::vector<const ProfilerInfo*>& all = all_profilers();
    ASSERT_EQ(all.size(), kDef.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
        const ProfilerInfo& p = *all[i];
        SCOPED_TRACE(p.name);
        EXPECT_EQ(def_name(kDef[i].name), p.name);
        EXPECT_EQ(p.kind, kDef[i].kind);
        // A profiler runs a session, a command its own words: exactly one of the two.
        if (p.is_command()) {
            EXPECT_NE(p.run_words, nullptr);
            EXPECT_EQ(p.create, nullptr);
        } else {
            EXPECT_NE(p.create, nullptr);
            EXPECT_EQ(p.run_words, nullptr);
        }
        EXPECT_EQ(p.own_options.empty(), p.make_options == nullptr);
    }
}

TEST(Registry, CommandsAreTheOnesWithoutSession) {
    std::vector<std::string> commands;
    for (const ProfilerInfo* p : all_profilers())
        if (p->is_command()) commands.emplace_back(p->name);
    EXPECT_EQ(commands, (std::vector<std::string>{"list", "usdt", "flamegraph", "heatmap", "serve", "kcore"}));
}

TEST(Registry, NamesAndLookup) {
    const std::vector<std::string>& names = profiler_names();
    ASSERT_EQ(names.size(), all_profilers().size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(names[i], all_profilers()[i]->name);
        EXPECT_EQ(find_profiler(names[i]), all_profilers()[i]);
    }
    EXPECT_EQ(find_profiler("no-such"), nullptr);
}

namespace {

struct DemoOwn final : ProfilerOptions {
    int level = 3;
    bool quick = false;
};
using Own = OwnOptions<DemoOwn>;
const OptionRow kRows[] = {
    Own::row('L', "level", "N", ArgKind::Value, false, Group::Filter, "the level",
             [](DemoOwn& o, OptionValue v) {
                 if (*v != "1" && *v != "2") throw Error::usage("bad level");
                 o.level = *v == "1" ? 1 : 2;
             }),
    Own::row(0, "quick", "", ArgKind::Flag, true, Group::Profiler, "be quick",
             [](DemoOwn& o, OptionValue v) { o.quick = flag_value(v); }),
};

}  // namespace

TEST(OwnOptions, RowsKeepTheirFieldsAndStoreIntoT) {
    EXPECT_EQ(kRows[0].id, Opt::Own);
    EXPECT_EQ(kRows[0].short_name, 'L');
    EXPECT_STREQ(kRows[0].long_name, "level");
    EXPECT_STREQ(kRows[0].hint, "N");
    EXPECT_EQ(kRows[0].kind, ArgKind::Value);
    EXPECT_FALSE(kRows[0].negatable);
    EXPECT_EQ(kRows[0].group, Group::Filter);
    EXPECT_STREQ(kRows[0].help, "the level");
    EXPECT_TRUE(kRows[1].negatable);

    std::shared_ptr<ProfilerOptions> own = Own::make();
    auto& demo = static_cast<DemoOwn&>(*own);
    EXPECT_EQ(demo.level, 3);  // T's defaults
    kRows[0].store(*own, std::string_view("1"));
    EXPECT_EQ(demo.level, 1);
    EXPECT_THROW(kRows[0].store(*own, std::string_view("9")), Error);
    kRows[1].store(*own, std::string_view("1"));
    EXPECT_TRUE(demo.quick);
    kRows[1].store(*own, std::string_view("0"));
    EXPECT_FALSE(demo.quick);
    EXPECT_FALSE(flag_value(std::nullopt));
}

}  // namespace perfprof
