#include "cli/option_messages.h"

#include <algorithm>
#include <string_view>

#include "cli/option_table.h"
#include "core/text.h"

namespace perfprof::cli {

namespace {

// A row of the table or of any profiler's own options.
const OptionRow* any_long(std::string_view name, const std::vector<const ProfilerInfo*>& registry) {
    if (const OptionRow* row = find_long(name)) return row;
    for (const ProfilerInfo* p : registry)
        for (const OptionRow& row : p->own_options)
            if (name == row.long_name) return &row;
    return nullptr;
}

const OptionRow* any_short(char c, const std::vector<const ProfilerInfo*>& registry) {
    if (const OptionRow* row = find_short(c)) return row;
    for (const ProfilerInfo* p : registry)
        for (const OptionRow& row : p->own_options)
            if (c && row.short_name == c) return &row;
    return nullptr;
}

}  // namespace

std::string shown_name(const OptionRow& row) {
    return *row.long_name ? row.long_name : std::string(1, row.short_name);
}

std::string missing_value_message(const std::string& what, const std::vector<std::string>& args,
                                  const std::vector<const ProfilerInfo*>& registry) {
    const std::string override_tail = " was given a disallowed flag override";
    if (what.size() > override_tail.size() && what.ends_with(override_tail))
        return "option `" + what.substr(0, what.size() - override_tail.size()) + "' takes no value";
    if (!args.empty()) {
        const std::string& last = args.back();
        if (last.starts_with("--")) {
            return "option `" + last.substr(2, last.find('=') - 2) + "' requires a value";
        }
        for (std::size_t i = 1; i < last.size(); ++i) {
            const OptionRow* row = any_short(last[i], registry);
            if (row && row->kind == ArgKind::Value)
                return "option `" + shown_name(*row) + "' requires a value";
        }
    }
    return what;
}

std::string unknown_option_message(const std::string& w, const std::vector<const ProfilerInfo*>& registry,
                                   std::vector<std::string> usable, const char* profiler,
                                   const std::string& see) {
    std::string name;
    const OptionRow* row = nullptr;
    bool known = false;
    if (w.starts_with("--")) {
        name = w.substr(2, w.find('=') - 2);
        row = any_long(name, registry);
        if (!row && name.starts_with("no-")) {
            const OptionRow* base = any_long(std::string_view(name).substr(3), registry);
            if (base && !base->negatable) return "option `" + name + "' isn't available" + see;
            row = base;
        }
        known = row || name == "symbols";
    } else {
        row = any_short(w[1], registry);
        if (!row) return "unknown switch `" + std::string(1, w[1]) + "'" + see;
        name = shown_name(*row);
        known = true;
    }
    if (!known) {
        std::sort(usable.begin(), usable.end());
        const std::string guess = core::nearest(name, usable);
        return "unknown option `" + name + "'" + (guess.empty() ? "" : " (did you mean --" + guess + "?)") +
               see;
    }
    // Before the profiler word every option is enabled, so a known one lands here only after it.
    return "option `" + name + "' is not usable with " + (profiler ? profiler : "perf-prof") + see;
}

}  // namespace perfprof::cli
