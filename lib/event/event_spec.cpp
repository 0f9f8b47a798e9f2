#include "event/event_spec.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>

#include "core/parse.h"
#include "core/text.h"
#include "perf-prof/error.h"

namespace perfprof::event {

namespace {

// Index of the first `sep` at or after `from` that is outside quotes and parentheses, or npos.
// An unterminated quote or '(' protects the rest of the text: the user's separator inside an
// unfinished expression must not cut it (the expression compiler reports the real error later).
size_t find_protected(std::string_view s, char sep, size_t from = 0) {
    int depth = 0;
    for (size_t i = from; i < s.size(); ++i) {
        char c = s[i];
        if (c == '\'' || c == '"') {
            size_t end = s.find(c, i + 1);
            if (end == std::string_view::npos) return std::string_view::npos;
            i = end;
            continue;
        }
        if (c == '(') {
            ++depth;
            continue;
        }
        // A stray ')' at depth 0 is ordinary text; it must not make depth negative.
        if (c == ')' && depth > 0) {
            --depth;
            continue;
        }
        if (depth == 0 && c == sep) return i;
    }
    return std::string_view::npos;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

[[noreturn]] void syntax(const std::string& what) {
    throw Error::usage("Syntax error: " + what);
}

std::string need_value(std::string_view name, bool has_value, std::string value) {
    // Expression/text attributes with an empty value would silently mean "not set".
    if (!has_value || value.empty()) syntax("attr " + std::string(name) + " needs a value");
    return value;
}

void no_value(std::string_view name, bool has_value) {
    if (has_value) syntax("attr " + std::string(name) + " takes no value");
}

// One ATTR (NAME[=VALUE]) of §2.5 into `a`.
void apply_attr(Attrs& a, std::string_view attr) {
    size_t eq = attr.find('=');
    bool has_value = eq != std::string_view::npos;
    std::string name(attr.substr(0, eq));
    std::string value = has_value ? strip_quotes(attr.substr(eq + 1)) : std::string();

    if (name == "stack") {
        no_value(name, has_value);
        a.stack = true;
    } else if (name == "max-stack") {
        long long n = core::parse_number(need_value(name, has_value, value), "max-stack");
        if (n < 0) syntax("max-stack must not be negative: " + value);
        a.max_stack =
            static_cast<int>(std::min<long long>(n, 127));  // 127 = the kernel's default perf_event_max_stack
        a.stack = true;
    } else if (name == "cpus") {
        a.cpus = core::parse_cpu_list(need_value(name, has_value, value));
        a.cpus_given = true;
    } else if (name == "untraced") {
        no_value(name, has_value);
        a.untraced = true;
    } else if (name == "trigger") {
        no_value(name, has_value);
        a.trigger = true;
    } else if (name == "alias") {
        a.alias = need_value(name, has_value, value);
    } else if (name == "exec") {
        a.exec = need_value(name, has_value, value);
    } else if (name == "key") {
        a.key = need_value(name, has_value, value);
    } else if (name == "printkey") {
        a.printkey = need_value(name, has_value, value);
    } else if (name == "role") {
        a.role = need_value(name, has_value, value);
    } else if (name == "ptr") {
        a.ptr = need_value(name, has_value, value);
    } else if (name == "size") {
        a.size = need_value(name, has_value, value);
    } else if (name == "num") {
        a.num = need_value(name, has_value, value);
    } else if (name == "top-by" || name == "top_by") {
        a.top_by = need_value(name, has_value, value);
        a.top.push_back({true, a.top_by});
    } else if (name == "top-add" || name == "top_add") {
        a.top_add = need_value(name, has_value, value);
        a.top.push_back({false, a.top_add});
    } else if (name == "comm") {
        a.comm = need_value(name, has_value, value);
    } else if (name == "index") {
        a.index = need_value(name, has_value, value);
    } else if (name == "vm" || name == "push" || name == "pull") {
        // Event propagation between hosts/guests is out of scope (SPEC §2.5); refuse rather than ignore,
        // so nobody believes events are being pushed or pulled.
        throw Error::usage("attr " + name + "= (event propagation) is not supported");
    } else {
        syntax("Unknown attr " + name);
    }
}

// FUNC@PATH of a uprobe, where the whole may be quoted and PATH usually is.
void split_uprobe(EventItem& it, const std::string& target) {
    size_t at = find_protected(target, '@');
    if (at == std::string::npos) syntax(it.text + " (uprobe needs FUNC@PATH)");
    it.name = strip_quotes(target.substr(0, at));
    it.path = strip_quotes(target.substr(at + 1));
    if (it.name.empty() || it.path.empty()) syntax(it.text + " (uprobe needs FUNC@PATH)");
}

EventItem parse_event(const std::string& text, const std::vector<std::string>& profilers) {
    EventItem it;
    it.text = text;
    std::vector<std::string> parts = split_protected(text, '/');
    const std::string& head = parts[0];

    if (parts.size() == 2) syntax(text + " (FILTER must be terminated by '/')");
    if (parts.size() >= 3) {
        // split_protected yields an empty last part exactly when the text ends with '/'.
        if (!parts.back().empty()) syntax(parts.back());
        for (size_t i = 2; i + 1 < parts.size(); ++i)
            if (!parts[i].empty()) apply_attr(it.attrs, parts[i]);  // "//" is an empty ATTR: ignored
    }
    std::string second = parts.size() >= 3 ? strip_quotes(parts[1]) : std::string();

    size_t colon = find_protected(head, ':');
    if (colon == std::string::npos) {
        it.kind = Kind::Profiler;
        it.sys = strip_quotes(head);
        if (it.sys.empty()) syntax(text.empty() ? std::string("empty event") : text);
        if (!contains(profilers, it.sys)) {
            // Most often a tracepoint's NAME without its SYS (-e sched_switch).
            const std::string guess = core::nearest(it.sys, profilers);
            throw Error::usage("profiler " + it.sys + " not found" +
                               (guess.empty() ? "" : " (did you mean " + guess + "?)") +
                               "; a tracepoint is SYS:NAME (see 'perf-prof list " + it.sys + "')");
        }
        it.profiler_options = second;
        check_nested_attrs(it);
        return it;
    }

    it.sys = head.substr(0, colon);
    std::string target = strip_quotes(std::string_view(head).substr(colon + 1));
    if (it.sys.empty() || target.empty()) syntax(text + " (expected SYS:NAME)");
    it.filter = second;
    it.has_filter = parts.size() >= 3;

    if (it.sys == "kprobe" || it.sys == "kretprobe") {
        it.kind = it.sys == "kprobe" ? Kind::Kprobe : Kind::Kretprobe;
        it.name = target;
    } else if (it.sys == "uprobe" || it.sys == "uretprobe") {
        it.kind = it.sys == "uprobe" ? Kind::Uprobe : Kind::Uretprobe;
        split_uprobe(it, target);
    } else {
        it.kind = Kind::Tracepoint;
        it.name = target;
        it.profiler_candidate = contains(profilers, it.sys);
    }
    return it;
}

}  // namespace

std::vector<std::string> split_protected(std::string_view s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        size_t pos = find_protected(s, sep, start);
        if (pos == std::string_view::npos) {
            out.emplace_back(s.substr(start));
            return out;
        }
        out.emplace_back(s.substr(start, pos - start));
        start = pos + 1;
    }
}

std::string strip_quotes(std::string_view s) {
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
        return std::string(s.substr(1, s.size() - 2));
    return std::string(s);
}

std::vector<EventItem> parse_event_list(std::string_view list, const std::vector<std::string>& profilers) {
    std::vector<EventItem> out;
    const std::vector<std::string> items = split_protected(list, ',');
    for (size_t i = 0; i < items.size(); ++i) {
        try {
            out.push_back(parse_event(items[i], profilers));
        } catch (const Error& e) {
            // "cpus=0,2" unquoted: the comma ended the event, and "Syntax error: cpus=0" alone
            // does not say why.
            const bool cut_list = i + 1 < items.size() && items[i].find("cpus=") != std::string::npos &&
                                  !items[i + 1].empty() && std::isdigit(static_cast<unsigned char>(items[i + 1][0]));
            if (!cut_list) throw;
            throw Error::usage(std::string(e.what()) + " (a comma ends an event: quote a cpus= list, cpus='0,2')");
        }
    }
    return out;
}

void check_nested_attrs(const EventItem& item) {
    const Attrs& a = item.attrs;
    const std::pair<const char*, const std::string*> field_attrs[] = {
        {"exec", &a.exec},       {"key", &a.key},   {"printkey", &a.printkey}, {"role", &a.role},
        {"ptr", &a.ptr},         {"size", &a.size}, {"num", &a.num},           {"top-by", &a.top_by},
        {"top-add", &a.top_add}, {"comm", &a.comm}, {"index", &a.index},
    };
    for (const auto& [name, value] : field_attrs)
        if (!value->empty())
            throw Error::usage("attr " + std::string(name) + " needs event fields; profiler event " +
                               item.sys + " has none");
}

bool is_glob(std::string_view sys_name) {
    return sys_name.find_first_of("*?[") != std::string_view::npos;
}

std::string expand_wildcards(std::string_view list, const std::vector<std::string>& sorted_tracepoints) {
    std::string out;
    bool first = true;
    // Not `out.empty()`: a leading empty EVENT must survive, or ",a:b*" would be accepted while
    // ",a:b" is "Syntax error: empty event" (found by tests/fuzz/event_spec_fuzz).
    auto append = [&](std::string_view ev) {
        if (!first) out += ',';
        first = false;
        out += ev;
    };
    for (const std::string& ev : split_protected(list, ',')) {
        size_t slash = find_protected(ev, '/');
        std::string pattern = ev.substr(0, slash);
        // Only SYS:NAME heads are globs; a nested profiler word has no ':' and is never expanded.
        if (pattern.find(':') == std::string::npos || !is_glob(pattern)) {
            append(ev);
            continue;
        }
        std::string suffix = slash == std::string::npos ? std::string() : ev.substr(slash);
        bool matched = false;
        for (const std::string& tp : sorted_tracepoints) {
            if (fnmatch(pattern.c_str(), tp.c_str(), 0) == 0) {
                append(tp + suffix);
                matched = true;
            }
        }
        if (!matched) throw Error::usage("No events matching pattern '" + pattern + "'");
    }
    return out;
}

}  // namespace perfprof::event
