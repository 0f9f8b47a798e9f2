// Help texts (SPEC §1.8), generated from our option table rather than by CLI11's formatter so
// that the layout is exactly the one scripts and users know from upstream.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "cli/option_table.h"
#include "perf-prof/profiler.h"

namespace perfprof::cli {

// §1.8.1: usage lines, tool description, profiler list, pointer to per-profiler help.
std::string main_help(const std::vector<const ProfilerInfo*>& registry);
void print_main_help(FILE* f, const std::vector<const ProfilerInfo*>& registry);

// §1.8.2: usage, summary, body, then the option groups this profiler accepts.
std::string profiler_help(const ProfilerInfo& p);
void print_profiler_help(FILE* f, const ProfilerInfo& p);

// One option entry of §1.8.2 (prefix, padding or wrap, help lines), newline-terminated.
std::string format_option(const OptionRow& row, const char* help);

// Whether profiler `p` accepts option `id` (global group unless p.global_options is false,
// or listed in p.options).
bool accepts(const ProfilerInfo& p, Opt id);

}  // namespace perfprof::cli
