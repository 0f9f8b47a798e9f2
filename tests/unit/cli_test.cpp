// lib/cli: option table and parser (SPEC §1.2–§1.5), on the fake registry of cli_fake_registry.h;
// the help layout (SPEC §1.8) is cli_help_test's.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/help.h"
#include "cli/option_table.h"
#include "cli/parser.h"
#include "cli_fake_registry.h"
#include "core/parse.h"
#include "perf-prof/error.h"
#include "usage_error.h"

namespace perfprof::cli {
namespace {

Parsed P(std::vector<std::string> args) {
    return parse(args, kRegistry);
}

// The message of the usage error `args` raise; fails the test when they raise none.
std::string usage_error(std::vector<std::string> args) {
    return usage_error_in(args, kRegistry);
}

using Words = std::vector<std::string>;

// ---- option table ----

TEST(OptionTable, OneRowPerOptInEnumOrder) {
    auto table = option_table();
    ASSERT_EQ(table.size(), kOptCount);
    for (std::size_t i = 0; i < table.size(); ++i) {
        EXPECT_EQ(static_cast<std::size_t>(table[i].id), i);
        // -g is the one short-only row: its long spelling is --call-graph, a row of its own.
        if (table[i].id == Opt::CallGraph)
            EXPECT_EQ(std::string(table[i].long_name), "");
        else
            EXPECT_NE(std::string(table[i].long_name), "");
        EXPECT_NE(std::string(table[i].help), "");
        bool takes_value = table[i].kind == ArgKind::Value || table[i].kind == ArgKind::OptionalValue;
        EXPECT_EQ(takes_value, std::string(table[i].hint) != "") << table[i].long_name;
    }
}

TEST(OptionTable, GroupsAndLookups) {
    for (Opt o : {Opt::Cpus, Opt::Pids, Opt::Tids, Opt::Cgroups, Opt::Watermark, Opt::Interval, Opt::Output,
                  Opt::Order, Opt::MmapPages, Opt::ExitN, Opt::UsageSelf, Opt::Version, Opt::Verbose,
                  Opt::Quiet, Opt::Help})
        EXPECT_EQ(option_row(o).group, Group::Option);
    EXPECT_EQ(option_row(Opt::UserCallchain).group, Group::Filter);
    EXPECT_EQ(option_row(Opt::KernelCallchain).group, Group::Filter);
    for (Opt o : {Opt::Event, Opt::Filter, Opt::CallGraph, Opt::CallGraphMode})
        EXPECT_EQ(option_row(o).group, Group::Profiler);
    EXPECT_EQ(find_short('g')->id, Opt::CallGraph);
    EXPECT_EQ(find_long("call-graph")->id, Opt::CallGraphMode);

    EXPECT_EQ(find_short('C')->id, Opt::Cpus);
    EXPECT_EQ(find_short('N')->id, Opt::ExitN);
    EXPECT_EQ(find_short('x'), nullptr);
    EXPECT_EQ(find_short(0), nullptr);
    EXPECT_EQ(find_long("mmap-pages")->id, Opt::MmapPages);
    EXPECT_EQ(find_long("mmap"), nullptr);
    int negatable = 0;
    for (const auto& row : option_table()) negatable += row.negatable;
    EXPECT_EQ(negatable, 3);
    EXPECT_TRUE(option_row(Opt::Inherit).negatable);
    EXPECT_TRUE(option_row(Opt::UserCallchain).negatable);
    EXPECT_TRUE(option_row(Opt::KernelCallchain).negatable);
}

// ---- actions ----

TEST(Parse, MainHelp) {
    EXPECT_EQ(P({}).action, Action::MainHelp);
    EXPECT_EQ(P({"-h"}).action, Action::MainHelp);
    EXPECT_EQ(P({"--help"}).action, Action::MainHelp);
    EXPECT_EQ(P({"-h", "sig"}).action, Action::MainHelp);
    EXPECT_EQ(P({"-C", "x", "-h"}).action, Action::MainHelp);  // help wins over a bad value
    // Options but no profiler and no --symbols.
    Parsed p = P({"-v", "-C", "0"});
    EXPECT_EQ(p.action, Action::MainHelp);
    EXPECT_EQ(p.profiler, nullptr);
}

TEST(Parse, ProfilerHelp) {
    Parsed p = P({"sig", "-h"});
    EXPECT_EQ(p.action, Action::ProfilerHelp);
    EXPECT_EQ(p.profiler, &kSig);
    EXPECT_EQ(P({"-C", "0", "tr", "--help"}).action, Action::ProfilerHelp);
    EXPECT_EQ(P({"sig", "-gh"}).action, Action::ProfilerHelp);
    EXPECT_EQ(P({"-C", "x", "sig", "-h"}).action, Action::ProfilerHelp);
    // Inside the workload -h is the workload's.
    p = P({"sig", "ls", "-h"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.workload, (Words{"ls", "-h"}));
    p = P({"sig", "--", "-h"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.workload, (Words{"-h"}));
}

TEST(Parse, Version) {
    for (const Words& w : {Words{"-V"}, Words{"--version"}, Words{"-V", "sig"}, Words{"sig", "-V"},
                           Words{"-C", "0", "tr", "-e", "x", "--version"}}) {
        Parsed p = P(w);
        EXPECT_EQ(p.action, Action::Version) << w[0];
        EXPECT_TRUE(p.opt.version);
    }
    EXPECT_EQ(P({"sig", "ls", "-V"}).action, Action::Run);
}

TEST(Parse, Symbols) {
    Parsed p = P({"--symbols", "/bin/true"});
    EXPECT_EQ(p.action, Action::Symbols);
    EXPECT_EQ(p.opt.symbols, "/bin/true");
    p = P({"-v", "--symbols=/usr/bin/env"});
    EXPECT_EQ(p.action, Action::Symbols);
    EXPECT_EQ(p.opt.symbols, "/usr/bin/env");
    EXPECT_EQ(p.opt.verbose, 1);
    EXPECT_EQ(usage_error({"--symbols"}), "option `symbols' requires a value (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"sig", "--symbols", "x"}),
              "option `symbols' is not usable with sig (see 'perf-prof sig -h')");
}

TEST(Parse, RunDefaults) {
    Parsed p = P({"sig"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.profiler, &kSig);
    EXPECT_EQ(p.opt.profiler, "sig");
    EXPECT_TRUE(p.opt.workload.empty());
    EXPECT_EQ(p.opt.verbose, 0);
    EXPECT_FALSE(p.opt.user_callchain.has_value());
    EXPECT_FALSE(p.opt.kernel_callchain.has_value());
    EXPECT_FALSE(p.opt.mmap_pages.has_value());
    EXPECT_FALSE(p.opt.watermark.has_value());
}

// ---- value formats ----

TEST(Parse, EveryValueOption) {
    // -p, -t and -C/--cgroups are separate attach modes (settle() refuses them together).
    EXPECT_EQ(P({"-p", "1,2", "tr"}).opt.pids, "1,2");
    EXPECT_EQ(P({"-t", "5", "tr"}).opt.tids, "5");
    Parsed p = P({"-C",   "0-3,8",   "--cgroups", "a,b",     "--watermark", "50",     "-i", "100",
                  "-o",   "out.txt", "--order",   "-m",      "8",           "-N",     "7",  "--usage-self",
                  "1000", "tr",      "-e",        "sched:a", "-e",          "sched:b"});
    ASSERT_EQ(p.action, Action::Run);
    const Options& o = p.opt;
    EXPECT_EQ(o.cpus, "0-3,8");
    EXPECT_EQ(o.cgroups, "a,b");
    EXPECT_TRUE(o.cgroups_given);
    EXPECT_EQ(o.watermark, 50);
    EXPECT_EQ(o.interval_ms, 100u);
    EXPECT_EQ(o.output, "out.txt");
    EXPECT_TRUE(o.order);
    EXPECT_EQ(o.mmap_pages, 8);
    EXPECT_EQ(o.exit_n, 7u);
    EXPECT_EQ(o.usage_self_ms, 1000u);
    EXPECT_EQ(o.events, (Words{"sched:a", "sched:b"}));
}

TEST(Parse, LongForms) {
    EXPECT_EQ(P({"--pids", "9", "sig"}).opt.pids, "9");
    EXPECT_EQ(P({"--tids=3", "sig"}).opt.tids, "3");
    Parsed p = P({"--cpus=0-1", "--interval=0x10", "--output", "f", "--mmap-pages=16", "--exit-N", "010",
                  "sig", "--filter", "bash*", "--call-graph", "dwarf,4096", "--verbose", "--quiet"});
    ASSERT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.cpus, "0-1");
    EXPECT_EQ(p.opt.interval_ms, 16u);  // strtol base 0: hex
    EXPECT_EQ(p.opt.output, "f");
    EXPECT_EQ(p.opt.mmap_pages, 16);
    EXPECT_EQ(p.opt.exit_n, 8u);  // strtol base 0: octal
    EXPECT_EQ(p.opt.filter, "bash*");
    EXPECT_TRUE(p.opt.filter_given);
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.dwarf_stack, 4096u);
    EXPECT_EQ(p.opt.verbose, -1);
}

TEST(Parse, AttachedShortValues) {
    EXPECT_EQ(P({"-p42", "sig"}).opt.pids, "42");
    Parsed p = P({"-C0-1", "-m4", "-N3", "sig"});
    EXPECT_EQ(p.opt.cpus, "0-1");
    EXPECT_EQ(p.opt.mmap_pages, 4);
    EXPECT_EQ(p.opt.exit_n, 3u);
}

TEST(Parse, CallGraphMode) {
    // --call-graph goes wherever -g does; the last of the two wins.
    Parsed p = P({"sig", "--call-graph", "dwarf"});
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.dwarf_stack, 8192u);
    p = P({"sig", "--call-graph=dwarf,100"});
    EXPECT_EQ(p.opt.dwarf_stack, 104u);
    p = P({"sig", "--call-graph", "fp"});
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.dwarf_stack, 0u);
    p = P({"sig", "--call-graph", "dwarf", "-g"});
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.dwarf_stack, 0u);
    p = P({"sig", "-g", "--call-graph", "dwarf,1024"});
    EXPECT_EQ(p.opt.dwarf_stack, 1024u);
    p = P({"sig", "-g"});
    EXPECT_EQ(p.opt.dwarf_stack, 0u);
    EXPECT_EQ(usage_error({"sig", "--call-graph", "foo"}),
              "--call-graph foo: expected fp or dwarf[,size] (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "--call-graph"}),
              "option `call-graph' requires a value (see 'perf-prof sig -h')");
}

TEST(Parse, Clusters) {
    Parsed p = P({"sig", "-gv"});
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.verbose, 1);
    p = P({"sig", "-gvC0"});  // a value option ends the cluster and takes the rest
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.cpus, "0");
    p = P({"sig", "-vgC", "2-3"});
    EXPECT_EQ(p.opt.cpus, "2-3");
    EXPECT_EQ(p.opt.verbose, 1);
}

TEST(Parse, EmptyAttachedValueIsAValue) {
    // "--x=" must not swallow the next word.
    Parsed p = P({"--cgroups=", "-v", "sig"});
    ASSERT_EQ(p.action, Action::Run);
    EXPECT_TRUE(p.opt.cgroups_given);
    EXPECT_EQ(p.opt.cgroups, "");
    EXPECT_EQ(p.opt.verbose, 1);
    p = P({"sig", "--filter=", "ls"});
    EXPECT_TRUE(p.opt.filter_given);
    EXPECT_EQ(p.opt.filter, "");
    EXPECT_EQ(p.opt.workload, (Words{"ls"}));
    // Such words reach values and the workload unchanged.
    p = P({"-e", "--x=", "tr", "ls", "--y="});
    EXPECT_EQ(p.opt.events, (Words{"--x="}));
    EXPECT_EQ(p.opt.workload, (Words{"ls", "--y="}));
    EXPECT_EQ(usage_error({"sig", "--cpus="}), "invalid CPU list '': empty (see 'perf-prof sig -h')");
}

TEST(Parse, ValueMayLookLikeAnOption) {
    Parsed p = P({"tr", "-e", "-C", "-o", "--order"});
    EXPECT_EQ(p.opt.events, (Words{"-C"}));
    EXPECT_EQ(p.opt.output, "--order");
    EXPECT_FALSE(p.opt.order);
}

TEST(Parse, VerboseQuietCounter) {
    EXPECT_EQ(P({"sig", "-v", "-v"}).opt.verbose, 2);
    EXPECT_EQ(P({"sig", "-vvv"}).opt.verbose, 3);
    EXPECT_EQ(P({"sig", "-v", "-q"}).opt.verbose, -1);
    EXPECT_EQ(P({"sig", "-v", "-v", "-q"}).opt.verbose, -1);
    EXPECT_EQ(P({"sig", "-q", "-v"}).opt.verbose, 1);
    EXPECT_EQ(P({"sig", "-q", "-q"}).opt.verbose, -2);
    EXPECT_EQ(P({"-v", "sig", "-q"}).opt.verbose, -1);  // one counter across the profiler word
    EXPECT_EQ(P({"-q", "sig", "-vv"}).opt.verbose, 2);
}

TEST(Parse, CallchainNegation) {
    Parsed p = P({"sig", "-g", "--no-user-callchain", "--kernel-callchain"});
    EXPECT_EQ(p.opt.user_callchain, false);
    EXPECT_EQ(p.opt.kernel_callchain, true);
    p = P({"sig", "-g", "--no-user-callchain", "--user-callchain", "--kernel-callchain",
           "--no-kernel-callchain"});
    EXPECT_EQ(p.opt.user_callchain, true);  // last wins
    EXPECT_EQ(p.opt.kernel_callchain, false);
    p = P({"--no-kernel-callchain", "tr"});  // before the profiler word every option is allowed
    EXPECT_EQ(p.opt.kernel_callchain, false);
}

TEST(Parse, RepeatedOptionLastWins) {
    Parsed p = P({"-C", "0", "sig", "-C", "1", "--filter", "a", "--filter", "b", "-m", "4", "-m", "8"});
    EXPECT_EQ(p.opt.cpus, "1");
    EXPECT_EQ(p.opt.filter, "b");
    EXPECT_EQ(p.opt.mmap_pages, 8);
}

TEST(Parse, BadValues) {
    EXPECT_EQ(usage_error({"-m", "3", "sig"}),
              "-m/--mmap-pages must be a power of two, got 3 (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "--watermark", "101"}),
              "option `watermark' expects a percentage from 0 to 100, got 101 (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-C", "1-0"}),
              "invalid CPU list '1-0': range 1-0 is reversed (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"-C", "x", "sig"}), "invalid CPU list 'x': bad item 'x' (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-N", "12abc"}),
              "option `exit-N' expects a numerical value (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-N", "-1"}),
              "option `exit-N' must not be negative (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-i", "ten"}),
              "option `interval' expects a numerical value (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "--usage-self", "-5"}),
              "option `usage-self' must not be negative (see 'perf-prof sig -h')");
    EXPECT_NE(usage_error({"sig", "-p", "0"}).find("invalid PID list '0'"), std::string::npos);
    EXPECT_NE(usage_error({"sig", "-t", "a"}).find("invalid PID list 'a'"), std::string::npos);
    // With no profiler yet the pointer is the main help.
    EXPECT_EQ(usage_error({"-C", "x"}), "invalid CPU list 'x': bad item 'x' (see 'perf-prof -h')");
}

// Options one profiler takes live in its file: rows with their own store functions, parsed
// into the profiler's own struct (Options::own).
struct DemoOptions final : ProfilerOptions {
    std::optional<int> level;  // --level[=0|1]
    uint64_t count = 0;        // -k N
    bool quick = true;         // --quick / --no-quick
};
DemoOptions& demo(ProfilerOptions& o) {
    return static_cast<DemoOptions&>(o);
}
const OptionRow kDemoRows[] = {
    {Opt::Own, 0, "level", "0|1", ArgKind::OptionalValue, false, Group::Filter, "demo level",
     [](ProfilerOptions& o, OptionValue v) { demo(o).level = core::parse_zero_or_one(v, "level"); }},
    {Opt::Own, 'k', "count", "N", ArgKind::Value, false, Group::Profiler, "demo count",
     [](ProfilerOptions& o, OptionValue v) { demo(o).count = core::parse_bounded(*v, "count", 100); }},
    {Opt::Own, 'Q', "quick", "", ArgKind::Flag, true, Group::Profiler, "demo flag",
     [](ProfilerOptions& o, OptionValue v) { demo(o).quick = *v == "1"; }},
};
const ProfilerInfo kDemo{
    .name = "demo",
    .summary = "Demo with options of its own",
    .usage = "[OPTION...]",
    .options = {{Opt::CallGraph, nullptr}},
    .own_options = kDemoRows,
    .make_options = [] { return std::shared_ptr<ProfilerOptions>(std::make_shared<DemoOptions>()); },
};
const std::vector<const ProfilerInfo*> kWithDemo{&kSig, &kTr, &kDemo};

TEST(Parse, OwnOptions) {
    auto parse_demo = [](std::vector<std::string> args) { return parse(args, kWithDemo); };
    Parsed p = parse_demo({"demo", "--level", "-k", "0x10", "--no-quick", "-g"});
    ASSERT_EQ(p.action, Action::Run);
    ASSERT_TRUE(p.opt.own);
    const DemoOptions& d = p.opt.own_as<DemoOptions>();
    EXPECT_EQ(d.level, 1);
    EXPECT_EQ(d.count, 16u);
    EXPECT_FALSE(d.quick);
    EXPECT_TRUE(p.opt.call_graph);
    // Defaults when none is given; a clustered short option; last one wins.
    p = parse_demo({"demo", "-gQk5", "--level=0", "-k", "7"});
    EXPECT_EQ(p.opt.own_as<DemoOptions>().level, 0);
    EXPECT_EQ(p.opt.own_as<DemoOptions>().count, 7u);
    EXPECT_TRUE(p.opt.own_as<DemoOptions>().quick);
    EXPECT_FALSE(parse_demo({"demo"}).opt.own_as<DemoOptions>().level);
    // The optional value is only ever attached: a separate word is not taken.
    EXPECT_EQ(parse_demo({"demo", "--level", "0"}).opt.workload, (Words{"0"}));
    // Before the profiler word they are allowed, and ignored by a profiler that lacks them.
    p = parse_demo({"-k", "3", "demo"});
    EXPECT_EQ(p.opt.own_as<DemoOptions>().count, 3u);
    p = parse_demo({"-k", "3", "--level=1", "sig"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_FALSE(p.opt.own);
    // A bad value is the profiler's message; after the profiler word another's is unusable.
    auto err = [&](std::vector<std::string> args) {
        try {
            parse(args, kWithDemo);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(err({"demo", "--level=yes"}),
              "option `level' takes 0 or 1, not 'yes' (see 'perf-prof demo -h')");
    EXPECT_EQ(err({"demo", "-k", "101"}), "option `count' must be at most 100 (see 'perf-prof demo -h')");
    EXPECT_EQ(err({"demo", "-k"}), "option `count' requires a value (see 'perf-prof demo -h')");
    EXPECT_EQ(err({"sig", "--level"}), "option `level' is not usable with sig (see 'perf-prof sig -h')");
    EXPECT_EQ(err({"sig", "-k", "1"}), "option `count' is not usable with sig (see 'perf-prof sig -h')");
    EXPECT_EQ(err({"demo", "--no-level"}), "option `no-level' isn't available (see 'perf-prof demo -h')");
}

TEST(Help, OwnOptionsShownInTheirGroups) {
    const std::string h = profiler_help(kDemo);
    const std::string filter = "FILTER OPTION:\n      --level[=<0|1>]           demo level\n\n";
    const std::string prof = "PROFILER OPTION:\n" + kCallGraphHelp +
                             "  -k, --count <N>               demo count\n"
                             "  -Q, --quick                   demo flag\n\n";
    EXPECT_NE(h.find(filter), std::string::npos) << h;
    EXPECT_NE(h.find(prof), std::string::npos) << h;
}

// The real profilers: own option names never shadow a shared one, and a name two profilers
// declare is the same kind of option in both (one command-line option before the profiler).
TEST(Registry, OwnOptionsAreConsistent) {
    std::map<std::string, const OptionRow*> seen;
    for (const ProfilerInfo* p : all_profilers()) {
        EXPECT_EQ(p->own_options.empty(), p->make_options == nullptr) << p->name;
        for (const OptionRow& row : p->own_options) {
            EXPECT_EQ(row.id, Opt::Own) << row.long_name;
            EXPECT_NE(row.store, nullptr) << row.long_name;
            EXPECT_EQ(find_long(row.long_name), nullptr) << row.long_name;
            if (row.short_name) {
                EXPECT_EQ(find_short(row.short_name), nullptr) << row.long_name;
            }
            // A short-only option (kcore's -1 -2 -4 -8) is known by its letter.
            const std::string key = *row.long_name ? row.long_name : std::string("-") + row.short_name;
            auto [it, fresh] = seen.emplace(key, &row);
            if (!fresh) {
                EXPECT_EQ(it->second->kind, row.kind) << row.long_name;
                EXPECT_EQ(it->second->short_name, row.short_name) << row.long_name;
            }
        }
    }
}

// profile's eBPF and PMU options (SPEC §1.9) through the real registry: its messages.
TEST(Parse, ProfileOwnOptionErrors) {
    auto err = [](std::vector<std::string> args) {
        try {
            parse(args, all_profilers());
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), Error::Kind::Usage);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(err({"--irqs_disabled=1", "--tif_need_resched", "--exclude_pid", "0x10", "--prio", "120,0-2",
                   "--sched_policy", "6", "profile", "-F", "99"}),
              "no error");
    EXPECT_EQ(err({"--irqs_disabled=yes", "profile"}),
              "option `irqs_disabled' takes 0 or 1, not 'yes' (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"profile", "--prio", "0-140"}),
              "invalid prio list '0-140': prio number above 139 in '0-140' (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"profile", "--exclude_pid", "12ab"}),
              "option `exclude_pid' expects a numerical value (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"profile", "--exclude_pid", "4294967296"}),
              "option `exclude_pid' must be at most 2147483647 (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"profile", "--sched_policy", "4"}),
              "option `sched_policy': 4 is not a scheduling policy (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"profile", "--nr_running_max", "-1"}),
              "option `nr_running_max' must not be negative (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"profile", "--than", "101"}),
              "option `than' expects a percentage from 0 to 100, got 101 (see 'perf-prof profile -h')");
    EXPECT_EQ(err({"trace", "--prio", "1"}),
              "option `prio' is not usable with trace (see 'perf-prof trace -h')");
    EXPECT_EQ(err({"signal", "--overwrite"}),
              "option `overwrite' is not usable with signal (see 'perf-prof signal -h')");
}

TEST(Parse, MissingValue) {
    EXPECT_EQ(usage_error({"sig", "-C"}), "option `cpus' requires a value (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-gC"}), "option `cpus' requires a value (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "--interval"}),
              "option `interval' requires a value (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"-m"}), "option `mmap-pages' requires a value (see 'perf-prof -h')");
}

TEST(Parse, FlagsTakeNoValue) {
    EXPECT_EQ(usage_error({"--order=1", "sig"}), "option `order' takes no value (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"sig", "--user-callchain=0"}),
              "option `user-callchain' takes no value (see 'perf-prof sig -h')");
}

// ---- where options may appear ----

TEST(Parse, OptionsBeforeProfilerWord) {
    // Options the profiler does not accept are allowed (and kept) before its word.
    Parsed p = P({"-e", "x:y", "--filter", "f", "-g", "tr", "-e", "a:b"});
    ASSERT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.profiler, &kTr);
    EXPECT_EQ(p.opt.events, (Words{"x:y", "a:b"}));
    EXPECT_EQ(p.opt.filter, "f");
    EXPECT_TRUE(p.opt.call_graph);
}

TEST(Parse, OptionNotUsableAfterProfilerWord) {
    EXPECT_EQ(usage_error({"tr", "--filter", "x"}),
              "option `filter' is not usable with tr (see 'perf-prof tr -h')");
    EXPECT_EQ(usage_error({"sig", "-e", "x"}),
              "option `event' is not usable with sig (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-ge", "x"}),
              "option `event' is not usable with sig (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"tr", "-g"}), "option `g' is not usable with tr (see 'perf-prof tr -h')");
    EXPECT_EQ(usage_error({"tr", "--call-graph", "dwarf"}),
              "option `call-graph' is not usable with tr (see 'perf-prof tr -h')");
    EXPECT_EQ(usage_error({"tr", "--user-callchain"}),
              "option `user-callchain' is not usable with tr (see 'perf-prof tr -h')");
    EXPECT_EQ(usage_error({"tr", "--no-kernel-callchain"}),
              "option `no-kernel-callchain' is not usable with tr (see 'perf-prof tr -h')");
    // Global options are usable everywhere.
    EXPECT_EQ(P({"tr", "-C", "1", "-m", "2", "--order"}).action, Action::Run);
}

TEST(Parse, UnknownOption) {
    EXPECT_EQ(usage_error({"--bogus"}), "unknown option `bogus' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"--bogus=3", "sig"}), "unknown option `bogus' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"sig", "--cpu", "0"}),
              "unknown option `cpu' (did you mean --cpus?) (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"-x"}), "unknown switch `x' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"sig", "-gx"}), "unknown switch `x' (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"-v5", "sig"}), "unknown switch `5' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"--no-order"}), "option `no-order' isn't available (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"sig", "--no-filter"}),
              "option `no-filter' isn't available (see 'perf-prof sig -h')");
    EXPECT_EQ(usage_error({"sig", "-x", "--", "ls"}), "unknown switch `x' (see 'perf-prof sig -h')");
}

TEST(Parse, UnknownProfiler) {
    EXPECT_EQ(usage_error({"foo"}), "unknown profiler 'foo' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"-C", "0", "foo", "-g"}), "unknown profiler 'foo' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"--symbols", "/bin/true", "foo"}), "unknown profiler 'foo' (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"sigg"}), "unknown profiler 'sigg' (did you mean 'sig'?) (see 'perf-prof -h')");
    EXPECT_EQ(usage_error({"--", "ls"}), "a profiler must come before the workload (see 'perf-prof -h')");
}

// ---- workload ----

TEST(Parse, WorkloadWithoutSeparator) {
    Parsed p = P({"-v", "sig", "-g", "sleep", "1"});
    ASSERT_EQ(p.action, Action::Run);
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_EQ(p.opt.workload, (Words{"sleep", "1"}));
    EXPECT_FALSE(p.separator);
}

TEST(Parse, WorkloadWithSeparator) {
    Parsed p = P({"sig", "-g", "--", "ls", "-l"});
    EXPECT_EQ(p.opt.workload, (Words{"ls", "-l"}));
    EXPECT_TRUE(p.separator);
    p = P({"sig", "--", "-x", "--", "y"});
    EXPECT_EQ(p.opt.workload, (Words{"-x", "--", "y"}));
    p = P({"sig", "--"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_TRUE(p.opt.workload.empty());
}

TEST(Parse, OptionsAfterWorkloadWordBelongToTheWorkload) {
    // Our decision (differs from SPEC §1.2 rule 4): `sig ls -C 1` runs `ls -C 1`.
    Parsed p = P({"sig", "ls", "-C", "1", "-g", "--bogus", "--", "x"});
    ASSERT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.cpus, "");
    EXPECT_FALSE(p.opt.call_graph);
    EXPECT_EQ(p.opt.workload, (Words{"ls", "-C", "1", "-g", "--bogus", "--", "x"}));
}

TEST(Parse, SecondProfilerNameStartsTheWorkload) {
    Parsed p = P({"sig", "tr", "-e", "x"});
    EXPECT_EQ(p.profiler, &kSig);
    EXPECT_TRUE(p.opt.events.empty());
    EXPECT_EQ(p.opt.workload, (Words{"tr", "-e", "x"}));
}
}  // namespace
}  // namespace perfprof::cli
