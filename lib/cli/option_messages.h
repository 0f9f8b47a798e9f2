// The parser's messages about options (SPEC §11): a missing or unexpected value, an unknown or
// unusable option. Every row is looked for in the shared table and in every profiler's own.
#pragma once

#include <string>
#include <vector>

#include "perf-prof/profiler.h"

namespace perfprof::cli {

// An option's name in messages: its long name, or its letter for a short-only row.
std::string shown_name(const OptionRow& row);

// CLI11's ArgumentMismatch text `what` for the stretch `args`, said in our words: CLI11 reports
// a missing value only when argv ran out, so the culprit is in the last word ("--name", or a
// short cluster whose first value-taking letter is it).
std::string missing_value_message(const std::string& what, const std::vector<std::string>& args,
                                  const std::vector<const ProfilerInfo*>& registry);

// The option-looking word `w` that CLI11 did not know: unknown (with a "did you mean" among
// `usable`, the long names enabled here), not negatable, or known but not usable with
// `profiler` (null: before the profiler word). `see` ends every message.
std::string unknown_option_message(const std::string& w, const std::vector<const ProfilerInfo*>& registry,
                                   std::vector<std::string> usable, const char* profiler,
                                   const std::string& see);

}  // namespace perfprof::cli
