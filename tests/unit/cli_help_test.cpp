// lib/cli/help: the layout of an option's help line, a profiler's help and the main help
// (SPEC §1.8), on the fake registry of cli_fake_registry.h.
#include "cli/help.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/option_table.h"
#include "cli_fake_registry.h"

namespace perfprof::cli {
namespace {

TEST(Help, FormatOptionPaddingAndWrap) {
    auto row = [](char s, const char* l, const char* hint, ArgKind k) {
        return OptionRow{Opt::Filter, s, l, hint, k, false, Group::Profiler, ""};
    };
    // Prefix of exactly 30 characters: no padding, then the 2-space gap.
    OptionRow r30 = row('x', "abcdefghij", "123456789", ArgKind::Value);
    EXPECT_EQ(format_option(r30, "help"), "  -x, --abcdefghij <123456789>  help\n");
    // 31 characters: the help moves to the next line, column 32.
    OptionRow r31 = row('x', "abcdefghij", "1234567890", ArgKind::Value);
    EXPECT_EQ(format_option(r31, "help\nmore"), "  -x, --abcdefghij <1234567890>\n" + std::string(32, ' ') +
                                                    "help\n" + std::string(32, ' ') + "more\n");
    // Short prefix: padded to column 30.
    OptionRow flag = row(0, "order", "", ArgKind::Flag);
    EXPECT_EQ(format_option(flag, "a\nb"),
              "      --order" + std::string(17, ' ') + "  a\n" + std::string(32, ' ') + "b\n");
    OptionRow optional = row(0, "detail", "list", ArgKind::OptionalValue);
    EXPECT_EQ(format_option(optional, "d"), "      --detail[=<list>]" + std::string(7, ' ') + "  d\n");
    OptionRow counter = row('v', "verbose", "", ArgKind::Counter);
    EXPECT_EQ(format_option(counter, ""), "  -v, --verbose\n");
}

TEST(Help, ProfilerHelpGolden) {
    const std::string pad = std::string(32, ' ');
    const std::string expected =
        "\n"
        " Usage: perf-prof tr -e EVENT [OPTION...]\n"
        "\n"
        "    Demo tracer\n"
        "\n"
        "    EXAMPLES\n"
        "        perf-prof tr -e sched:sched_wakeup\n"
        "\n"
        "OPTION:\n"
        "  -C, --cpus <cpu[-cpu],...>    CPUs to monitor, e.g. 0-3,8 (default: all online)\n"
        "  -p, --pids <pid,...>          attach to every thread of these processes\n"
        "  -t, --tids <tid,...>          attach to these threads\n"
        "      --cgroups <cgroup,...>    attach to these perf_event cgroups: names, or\n" +
        pad + "regular expressions matched against their paths\n" +
        "      --inherit                 follow the threads and processes that the tasks of -p\n" + pad +
        "or the command create (the default; with -t: only\n" + pad +
        "when given); --no-inherit: only the tasks at start\n" +
        "      --watermark <0-100>       wake up when a ring buffer is this percent full\n" + pad +
        "(0: on every event)\n" +
        "  -i, --interval <ms>           period in ms of the tick that flushes the ring\n" + pad +
        "buffers and prints periodic output\n" +
        "  -o, --output <file>           append stdout and stderr to file (reopened on\n" + pad +
        "SIGUSR1)\n" +
        "      --order                   deliver events in timestamp order\n"
        "  -m, --mmap-pages <pages>      mmap data pages per ring buffer, a power of two\n"
        "  -N, --exit-N <N>              exit after N samples\n"
        "      --tsc                     convert timestamps to TSC cycles (x86, where the\n" +
        pad + "kernel publishes the conversion)\n" +
        "      --clock-offset <n>        add n to every timestamp (after --tsc)\n"
        "      --monotonic               timestamps from CLOCK_MONOTONIC\n"
        "      --usage-self <ms>         print perf-prof's own CPU usage and max RSS\n" +
        pad + "every N ms\n" +
        "      --sampling-limit <N>      with --perfeval-*: close when a listed CPU or\n" + pad +
        "thread has more than N events a second\n" + "      --perfeval-cpus <cpu[-cpu],...>\n" + pad +
        "with -i: print the events per second of these\n" + pad + "CPUs at each tick\n" +
        "      --perfeval-pids <pid,...>\n" + pad + "with -i: print the events per second of these\n" + pad +
        "processes at each tick\n" +
        "  -V, --version                 print the version and exit\n"
        "  -v, --verbose                 be more verbose (repeat for more)\n"
        "  -q, --quiet                   be quiet; a -q after -v sets the level to -1\n"
        "  -h, --help                    show this help\n"
        "\n"
        "PROFILER OPTION:\n"
        "  -e, --event <EVENT,...>       event selector; see 'perf-prof list'\n"
        "\n";
    EXPECT_EQ(profiler_help(kTr), expected);
}

TEST(Help, ProfilerHelpGroupsAndOverrides) {
    std::string h = profiler_help(kSig);
    const std::string head =
        "\n"
        " Usage: perf-prof sig [OPTION...] [--filter comm] [-g] [cmd [args...]]\n"
        "\n"
        "    Demo signal profiler\n"
        "\n"
        "    SYNOPSIS\n"
        "        Print every signal.\n"
        "\n"
        "    EXAMPLES\n"
        "        perf-prof sig -g\n"
        "\n"
        "OPTION:\n";
    EXPECT_EQ(h.substr(0, head.size()), head);  // the trailing empty body line is not doubled
    const std::string tail =
        "  -h, --help                    show this help\n"
        "\n"
        "FILTER OPTION:\n"
        "      --user-callchain          include user-space frames in call stacks\n"
        "                                (--no-user-callchain leaves them out)\n"
        "      --kernel-callchain        include kernel frames in call stacks\n"
        "                                (--no-kernel-callchain leaves them out)\n"
        "\n"
        "PROFILER OPTION:\n"
        "      --filter <filter>         task name glob\n" +
        kCallGraphHelp + "\n";
    ASSERT_GE(h.size(), tail.size());
    EXPECT_EQ(h.substr(h.size() - tail.size()), tail);
    EXPECT_EQ(h.find("--event"), std::string::npos);
}

TEST(Help, MainHelpGolden) {
    const std::string expected =
        "\n"
        " Usage: perf-prof profiler [PROFILER OPTION...] [help] [cmd [args...]]\n"
        "    or: perf-prof --symbols /path/to/bin\n"
        "\n"
        "    Profiling based on perf_event, analysing events in memory as they arrive.\n"
        "\n"
        " Available Profilers:\n"
        "   sig                  Demo signal profiler\n"
        "   tr                   Demo tracer\n"
        "\n"
        " See 'perf-prof profiler -h' for more information on a specific profiler.\n"
        "\n";
    EXPECT_EQ(main_help(kRegistry), expected);
}

TEST(Help, MainHelpBpfSection) {
    const ProfilerInfo bpf{.name = "kvm-BPF-exit", .summary = "eBPF thing", .usage = ""};
    std::string h = main_help({&kSig, &bpf, &kTr});
    EXPECT_NE(
        h.find("\n Available eBPF Profilers:\n   kvm-BPF-exit         eBPF thing\n\n Available Profilers:\n"
               "   sig                  Demo signal profiler\n   tr                   Demo tracer\n\n"),
        std::string::npos)
        << h;
}

TEST(Help, PrintersWriteTheStrings) {
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    ASSERT_NE(f, nullptr);
    print_profiler_help(f, kSig);
    print_main_help(f, kRegistry);
    std::fclose(f);
    EXPECT_EQ(std::string(buf, len), profiler_help(kSig) + main_help(kRegistry));
    free(buf);
}

}  // namespace
}  // namespace perfprof::cli
