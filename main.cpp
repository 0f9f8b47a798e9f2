// perf-prof: parse, find the profiler, run the session, map errors to exit codes.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli/help.h"
#include "cli/help_word.h"
#include "cli/parser.h"
#include "core/text.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "perf/session.h"
#include "sym/pprof_symbols.h"

#ifndef PERF_PROF_VERSION
#define PERF_PROF_VERSION "0.1.0"
#endif

namespace {
constexpr int kExitUsage = 129;  // help and usage errors (SPEC §1.8)

// A stop request that arrives while we start (parsing, reading kallsyms and tracefs) must end
// the run cleanly like a later one, with every output file written: blocked from before
// main(), it stays pending until the session's signalfd reads it (SPEC §1.11).
sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
    return set;
}
void block_stop_signals(int, char**, char**) {
    const sigset_t set = stop_signals();
    sigprocmask(SIG_BLOCK, &set, nullptr);
}
// .preinit_array: the first code of ours the dynamic loader runs, before the constructors of
// libc, libtraceevent and our own static objects.
__attribute__((section(".preinit_array"), used)) void (*const preinit_block)(int, char**,
                                                                             char**) = block_stop_signals;
// Everything but a session is interrupted as usual.
void unblock_stop_signals() {
    const sigset_t set = stop_signals();
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
}
}  // namespace

// A profiler named in an event list (SPEC §2.8): its name and options parsed as a command
// line of their own, for the session to open as a child device.
static perfprof::perf::DeviceSpec resolve_nested(const perfprof::NestedSpec& n, const std::string& parent) {
    using namespace perfprof;
    // SPEC §2.8 rule 1: OPTIONS split on single spaces, whole-text quotes already removed.
    std::vector<std::string> words{n.profiler};
    for (std::string_view rest = n.options; !rest.empty();) {
        const size_t sp = std::min(rest.find(' '), rest.size());
        if (sp) words.emplace_back(rest.substr(0, sp));
        rest.remove_prefix(std::min(sp + 1, rest.size()));
    }
    cli::Parsed p = cli::parse(words, all_profilers());
    if (p.action != cli::Action::Run || !p.profiler || p.profiler->is_command())
        throw Error("profiler " + n.profiler + " cannot be nested in " + parent);
    if (!p.opt.workload.empty())
        throw Error::usage("nested " + n.profiler + ": unexpected word '" + p.opt.workload[0] + "'");
    return {p.profiler->name, p.profiler->create, std::move(p.opt)};
}

// Results that could not all be written (a full disk, /dev/full) must not end in exit 0.
static int output_written(int rc) {
    if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
    std::fprintf(stderr, "perf-prof: the output could not be written: %s\n", std::strerror(errno));
    return rc ? rc : 1;
}

static int run(int argc, char** argv) {
    using namespace perfprof;
    std::vector<std::string> args(argv + 1, argv + argc);
    core::set_command_line(argc, argv);
    try {
        cli::Parsed p = cli::parse(args, all_profilers());
        if (p.action != cli::Action::Run || p.profiler->is_command()) unblock_stop_signals();
        switch (p.action) {
            case cli::Action::MainHelp:
                cli::print_main_help(stderr, all_profilers());
                return kExitUsage;
            case cli::Action::ProfilerHelp:
                cli::print_profiler_help(stderr, *p.profiler);
                return kExitUsage;
            case cli::Action::Version:
                std::printf("perf-prof %s\n", PERF_PROF_VERSION);
                return 0;
            case cli::Action::HelpWord:
                return cli::run_help_word(p.opt, p.profiler, all_profilers());
            case cli::Action::Symbols:
                return sym::run_pprof_symbols(p.opt.symbols);
            case cli::Action::Run:
                break;
        }
        if (p.profiler->is_command()) return p.profiler->run_words(p.opt);
        // A mistyped option may have become the workload: say so with -v (SPEC §1.2 rule 8).
        if (p.opt.verbose > 0 && !p.separator && !p.opt.workload.empty()) {
            std::printf("Unparsed options:");
            for (const std::string& w : p.opt.workload) std::printf(" %s", w.c_str());
            std::printf("\n");
        }
        perf::Session session(p.opt, *p.profiler, resolve_nested);
        return session.run();
    } catch (const Error& e) {
        std::fflush(stdout);
        // One line, hint included, so scripts and users see the whole problem in one place.
        if (e.hint().empty())
            std::fprintf(stderr, "perf-prof: %s\n", e.what());
        else
            std::fprintf(stderr, "perf-prof: %s (hint: %s)\n", e.what(), e.hint().c_str());
        return e.kind() == Error::Kind::Usage ? kExitUsage : 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "perf-prof: internal error: %s\n", e.what());
        return 1;
    }
}

int main(int argc, char** argv) {
    return output_written(run(argc, argv));
}
