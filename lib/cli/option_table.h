// The single option table shared by every profiler (SPEC §1.2, §1.4, §1.5): names, argument
// hints, kinds, groups and default help texts, one row per perfprof::Opt.
#pragma once

#include <span>
#include <string_view>

#include "perf-prof/options.h"

namespace perfprof::cli {

enum class ArgKind {
    Flag,           // no argument
    Counter,        // no argument, counts occurrences (-v, -q)
    Value,          // mandatory argument: "--x v", "--x=v", "-xv", "-x v"
    OptionalValue,  // argument only in the attached form "--x=v"; a separate word is never taken
};

// Order = order of the group headers in profiler help.
enum class Group { Option, Filter, Profiler };

struct OptionRow {
    Opt id;
    char short_name;        // 0 = none
    const char* long_name;  // without dashes
    const char* hint;       // argument hint shown as <hint>; "" for flags and counters
    ArgKind kind;
    bool negatable;  // accepts --no-NAME
    Group group;
    const char* help;  // default help text; may contain '\n'
};

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
