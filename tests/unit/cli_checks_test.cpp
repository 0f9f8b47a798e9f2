// lib/cli/checks: what options imply of each other, and the combinations refused; the parser's
// "did you mean" for an unknown option (issue 24).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/checks.h"
#include "cli/parser.h"
#include "perf-prof/error.h"
#include "usage_error.h"

namespace perfprof::cli {
namespace {

// "st" records stacks and draws them; "ev" takes -e lists; "pl" nothing of its own.
const ProfilerInfo kSt{
    .name = "st",
    .summary = "Stacks",
    .usage = "",
    .body = {"EXAMPLES", "    perf-prof st -g"},
    .options = {{Opt::CallGraph, nullptr},
                {Opt::FlameGraph, nullptr},
                {Opt::Pprof, nullptr},
                {Opt::UserCallchain, nullptr},
                {Opt::KernelCallchain, nullptr}},
};
const ProfilerInfo kEv{.name = "ev",
                       .summary = "Events",
                       .usage = "",
                       .body = {"EXAMPLES", "    perf-prof ev"},
                       .options = {{Opt::Event, nullptr}}};
const ProfilerInfo kPl{
    .name = "pl", .summary = "Plain", .usage = "", .body = {"EXAMPLES", "    perf-prof pl"}};
const std::vector<const ProfilerInfo*> kRegistry{&kSt, &kEv, &kPl};

Options run(std::vector<std::string> args) {
    Parsed p = parse(args, kRegistry);
    EXPECT_EQ(p.action, Action::Run);
    return p.opt;
}

std::string refused(std::vector<std::string> args) {
    return usage_error_in(args, kRegistry);
}

TEST(Settle, FlameGraphAndPprofImplyCallGraph) {
    EXPECT_FALSE(run({"st"}).call_graph);
    EXPECT_TRUE(run({"st", "--flame-graph", "x"}).call_graph);
    EXPECT_TRUE(run({"st", "--flame-graph", ""}).call_graph);
    EXPECT_TRUE(run({"st", "--pprof", "x.pb.gz"}).call_graph);
    // --call-graph dwarf keeps its unwinding.
    Options o = run({"st", "--call-graph", "dwarf", "--flame-graph", "x"});
    EXPECT_TRUE(o.call_graph);
    EXPECT_EQ(o.dwarf_stack, 8192u);
    // Given before the word of a profiler that takes none of them: ignored (SPEC §1.2 rule 2).
    EXPECT_FALSE(run({"--flame-graph", "x", "ev"}).call_graph);
}

TEST(Settle, CallGraphWithoutFrames) {
    EXPECT_EQ(refused({"st", "-g", "--no-user-callchain", "--no-kernel-callchain"}),
              "-g with --no-user-callchain and --no-kernel-callchain: no frame left to record (see "
              "'perf-prof st -h')");
    EXPECT_EQ(refused({"st", "--flame-graph", "x", "--no-user-callchain", "--no-kernel-callchain"}),
              "-g with --no-user-callchain and --no-kernel-callchain: no frame left to record (see "
              "'perf-prof st -h')");
    EXPECT_TRUE(run({"st", "-g", "--no-user-callchain"}).call_graph);
}

TEST(Settle, CallChainHalvesNeedStacks) {
    EXPECT_EQ(
        refused({"st", "--user-callchain"}),
        "--user-callchain chooses the frames of the stacks -g records: give -g too (see 'perf-prof st -h')");
    EXPECT_EQ(refused({"st", "--no-kernel-callchain"}),
              "--no-kernel-callchain chooses the frames of the stacks -g records: give -g too (see "
              "'perf-prof st -h')");
    EXPECT_EQ(run({"st", "--flame-graph", "x", "--user-callchain"}).user_callchain, true);
    // Given before the word of a profiler that takes neither: ignored (SPEC §1.2 rule 2).
    EXPECT_EQ(run({"--user-callchain", "pl"}).user_callchain, true);
}

TEST(Settle, OneAttachMode) {
    EXPECT_EQ(
        refused({"-p", "1", "-t", "2", "ev"}),
        "-p and -t: give one of them (-p attaches to every thread of the processes) (see 'perf-prof ev -h')");
    EXPECT_EQ(
        refused({"ev", "-p", "1", "--", "ls"}),
        "-p and a command: give one of them (with -p the command would not be run) (see 'perf-prof ev -h')");
    EXPECT_EQ(
        refused({"ev", "-t", "1", "ls"}),
        "-t and a command: give one of them (with -t the command would not be run) (see 'perf-prof ev -h')");
    EXPECT_EQ(refused({"ev", "-C", "0", "-p", "1"}),
              "-C and -p: give one of them (the events follow the attached tasks on every CPU; -C is for a "
              "system-wide run) (see 'perf-prof ev -h')");
    EXPECT_EQ(
        refused({"ev", "--cgroups", "a", "--", "ls"}),
        "--cgroups and a command: give one of them (the events follow the command on every CPU; --cgroups "
        "is for a system-wide run) (see 'perf-prof ev -h')");
    EXPECT_EQ(run({"ev", "-C", "0", "--cgroups", "a"}).cpus, "0");
    EXPECT_EQ(run({"ev", "-p", "1"}).pids, "1");
    EXPECT_EQ(run({"ev", "ls"}).workload, std::vector<std::string>{"ls"});
}

TEST(Settle, SamplingLimitNeedsPerfeval) {
    EXPECT_EQ(
        refused({"ev", "--sampling-limit", "5", "-i", "100"}),
        "--sampling-limit needs --perfeval-cpus or --perfeval-pids: it limits the rate of their events (see "
        "'perf-prof ev -h')");
    EXPECT_EQ(run({"ev", "--sampling-limit", "5", "-i", "100", "--perfeval-cpus", "0"}).sampling_limit, 5u);
}

TEST(Suggest, UnknownOptionNearAUsableOne) {
    EXPECT_EQ(refused({"st", "--flamegraph", "x"}),
              "unknown option `flamegraph' (did you mean --flame-graph?) (see 'perf-prof st -h')");
    EXPECT_EQ(refused({"--cpu", "0", "pl"}),
              "unknown option `cpu' (did you mean --cpus?) (see 'perf-prof -h')");
    EXPECT_EQ(refused({"pl", "--xyz"}), "unknown option `xyz' (see 'perf-prof pl -h')");
    // Only what this profiler takes is suggested.
    EXPECT_EQ(refused({"pl", "--flamegraph", "x"}), "unknown option `flamegraph' (see 'perf-prof pl -h')");
}

}  // namespace
}  // namespace perfprof::cli
