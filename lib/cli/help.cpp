#include "cli/help.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace perfprof::cli {

namespace {

// §1.8.2: prefixes up to this width are padded to it; help starts after a 2-space gap.
constexpr std::size_t kPrefixWidth = 30;
constexpr std::size_t kHelpColumn = kPrefixWidth + 2;
// §1.8.1: profiler names are left-aligned in this width.
constexpr std::size_t kNameWidth = 20;

bool is_bpf_profiler(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find("bpf") != std::string::npos;
}

void append_profiler_list(std::string& out, const char* title,
                          const std::vector<const ProfilerInfo*>& registry, bool bpf) {
    bool any = std::any_of(registry.begin(), registry.end(),
                           [&](const ProfilerInfo* p) { return is_bpf_profiler(p->name) == bpf; });
    if (!any) return;
    out += ' ';
    out += title;
    out += '\n';
    for (const ProfilerInfo* p : registry) {
        if (is_bpf_profiler(p->name) != bpf) continue;
        std::string name = p->name;
        if (name.size() < kNameWidth) name.resize(kNameWidth, ' ');
        out += "   " + name + " " + p->summary + "\n";
    }
    out += '\n';
}

const char* help_for(const ProfilerInfo& p, const OptionRow& row) {
    for (const OptUse& use : p.options)
        if (use.id == row.id && use.help) return use.help;
    return row.help;
}

}  // namespace

bool accepts(const ProfilerInfo& p, Opt id) {
    if (id == Opt::CallGraphMode) id = Opt::CallGraph;  // --call-graph goes with -g
    if (is_global(id))
        return p.global_options || id == Opt::Version || id == Opt::Verbose || id == Opt::Quiet ||
               id == Opt::Help;
    return std::any_of(p.options.begin(), p.options.end(), [&](const OptUse& u) { return u.id == id; });
}

std::string format_option(const OptionRow& row, const char* help) {
    std::string line = "  ";
    if (row.short_name) {
        line += '-';
        line += row.short_name;
    } else {
        line += "    ";
    }
    if (row.short_name && *row.long_name) line += ", ";
    if (*row.long_name) {
        line += "--";
        line += row.long_name;
    }
    switch (row.kind) {
        case ArgKind::Value:
            line += " <" + std::string(row.hint) + ">";
            break;
        case ArgKind::OptionalValue:
            line += "[=<" + std::string(row.hint) + ">]";
            break;
        case ArgKind::Flag:
        case ArgKind::Counter:
            break;
    }

    std::string_view text = help ? help : "";
    if (text.empty()) return line + '\n';

    if (line.size() <= kPrefixWidth) {
        line.resize(kPrefixWidth, ' ');
        line += "  ";
    } else {
        line += '\n';
        line.append(kHelpColumn, ' ');
    }
    for (bool first = true;; first = false) {
        std::size_t nl = text.find('\n');
        std::string_view part = text.substr(0, nl);
        if (!first && !part.empty()) line.append(kHelpColumn, ' ');
        line += part;
        line += '\n';
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return line;
}

std::string main_help(const std::vector<const ProfilerInfo*>& registry) {
    std::string out;
    out += "\n";
    out += " Usage: perf-prof profiler [PROFILER OPTION...] [help] [cmd [args...]]\n";
    out += "    or: perf-prof --symbols /path/to/bin\n";
    out += "\n";
    out += "    Profiling based on perf_event, analysing events in memory as they arrive.\n";
    out += "\n";
    append_profiler_list(out, "Available eBPF Profilers:", registry, true);
    append_profiler_list(out, "Available Profilers:", registry, false);
    out += " See 'perf-prof profiler -h' for more information on a specific profiler.\n";
    out += "\n";
    return out;
}

void print_main_help(FILE* f, const std::vector<const ProfilerInfo*>& registry) {
    std::fputs(main_help(registry).c_str(), f);
}

std::string profiler_help(const ProfilerInfo& p) {
    std::string out;
    out += "\n";
    out += " Usage: perf-prof ";
    out += p.name;
    if (p.usage && *p.usage) {
        out += ' ';
        out += p.usage;
    }
    out += "\n\n";
    out += "    ";
    out += p.summary;
    out += "\n\n";

    // Trailing blank body lines would double the blank line before the option groups.
    std::size_t body_end = p.body.size();
    while (body_end > 0 && p.body[body_end - 1].empty()) --body_end;
    for (std::size_t i = 0; i < body_end; ++i) {
        if (!p.body[i].empty()) out += "    " + p.body[i];
        out += '\n';
    }
    if (body_end > 0) out += '\n';

    for (Group g : {Group::Option, Group::Filter, Group::Profiler}) {
        std::string lines;
        for (const OptionRow& row : option_table())
            if (row.group == g && accepts(p, row.id)) lines += format_option(row, help_for(p, row));
        for (const OptionRow& row : p.own_options)
            if (row.group == g) lines += format_option(row, row.help);
        if (lines.empty()) continue;
        out += group_title(g);
        out += ":\n";
        out += lines;
        out += '\n';
    }
    return out;
}

void print_profiler_help(FILE* f, const ProfilerInfo& p) {
    std::fputs(profiler_help(p).c_str(), f);
}

}  // namespace perfprof::cli
