// The option table shared by the profilers (SPEC §1.2, §1.4, §1.5): names, argument hints,
// kinds, groups and default help texts, one row per perfprof::Opt. Options that only one
// profiler takes are rows of that profiler (ProfilerInfo::own_options), not of this table.
#pragma once

#include <span>
#include <string_view>

#include "perf-prof/options.h"

namespace perfprof::cli {

// Every row, in table (= help) order.
std::span<const OptionRow> option_table();

const OptionRow& option_row(Opt id);
const OptionRow* find_long(std::string_view name);  // exact long name, no dashes, no "no-" handling
const OptionRow* find_short(char c);

// "OPTION", "FILTER OPTION", "PROFILER OPTION".
const char* group_title(Group g);

// Options of the OPTION group are accepted by every profiler.
inline bool is_global(Opt id) {
    return option_row(id).group == Group::Option;
}

}  // namespace perfprof::cli
