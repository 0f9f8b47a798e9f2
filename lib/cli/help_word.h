// The `help` word (SPEC §1.10): `perf-prof [PROFILER] [OPTIONS incl. -e] help` prints a command
// template for the given events and their formats instead of running anything.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "perf-prof/options.h"
#include "perf-prof/profiler.h"

namespace perfprof::cli {

// The text run_help_word prints: empty without -e; otherwise a blank line, the help template of
// `profiler` (of every profiler in `registry` that has one when `profiler` is null), a blank
// line, then "{sys}:{name}\n{format}\n" for every real (not nested) event in list order. The -e
// lists are joined with ','. Throws Error as resolution does (§2.3, §2.4).
std::string help_word_text(const Options& opt, const ProfilerInfo* profiler,
                           const std::vector<const ProfilerInfo*>& registry);

// Prints help_word_text(opt, profiler, profilers) on stdout; returns the exit status (0).
// Without -e, throws Error::usage saying how the word is used.
int run_help_word(const Options& opt, const ProfilerInfo* profiler,
                  const std::vector<const ProfilerInfo*>& profilers);

}  // namespace perfprof::cli
