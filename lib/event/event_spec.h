// The event specification language of -e/--alloc/--free (SPEC §2.1–§2.5, §2.8 first paragraph).
// Pure text processing: nothing here touches tracefs; resolution (§2.3 steps 1–3) happens later.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace perfprof::event {

enum class Kind { Tracepoint, Kprobe, Kretprobe, Uprobe, Uretprobe, Profiler };

// §2.5. Expression attributes stay text: they can only be compiled once the event's fields are known.
struct Attrs {
    bool stack = false;
    int max_stack = 0;  // 0 = not given; clamped to 127; implies stack
    std::string alias, exec, key, printkey, role, ptr, size, num, top_by, top_add, comm, index;
    // Every top-by=/top-add= in order of appearance (top_by/top_add above keep the last of each):
    // top adds one column per item (SPEC-PROFILERS §P1).
    struct TopColumn {
        bool by = false;  // top-by (orders the rows) rather than top-add
        std::string expr;
    };
    std::vector<TopColumn> top;
    std::vector<int> cpus;
    bool cpus_given = false;
    bool untraced = false, trigger = false;
};

struct EventItem {
    Kind kind = Kind::Tracepoint;
    std::string sys;   // "kprobe", "uprobe", … for probes; the profiler name for Kind::Profiler
    std::string name;  // tracepoint NAME, probe FUNC; empty for Kind::Profiler
    std::string path;  // uprobe PATH, quotes stripped
    std::string filter;
    bool has_filter = false;
    Attrs attrs;
    std::string text;  // the original text of this EVENT
    // Kind::Profiler: the PROFILER-OPTIONS part (whole-text quotes removed, §2.8).
    std::string profiler_options;
    // Kind::Tracepoint whose SYS is also a profiler name (e.g. "signal:signal_generate" or
    // "bpf:kvm-exit"): only tracefs can tell which it is (§2.3 steps 1 and 4). If the resolver
    // turns it into a nested profiler, `filter` is its PROFILER-OPTIONS; call check_nested_attrs.
    bool profiler_candidate = false;
};

// §2.1 protected scan: split at `sep`, skipping quoted runs and (nested) parenthesised runs.
std::vector<std::string> split_protected(std::string_view s, char sep);

// §2.1: "'x'" / "\"x\"" → "x"; anything else unchanged.
std::string strip_quotes(std::string_view s);

// §2.2 grammar + §2.5 attributes. `profilers` are the registered profiler names, used to recognise
// nested profiler events. Throws Error::usage with the §11 texts.
std::vector<EventItem> parse_event_list(std::string_view list, const std::vector<std::string>& profilers);

// §2.5 Notes: a nested profiler event has no fields, so only stack, max-stack, alias, untraced,
// trigger and cpus are allowed. parse_event_list applies it to Kind::Profiler items already.
void check_nested_attrs(const EventItem& item);

// True if a "sys:name" text is a shell glob (§2.4).
bool is_glob(std::string_view sys_name);

// §2.4: every EVENT whose SYS:NAME part is a glob is replaced by its matches in
// `sorted_tracepoints` ("sys:name", list order), each with the EVENT's "/FILTER/ATTRS/" suffix.
// Returns the expanded list text; throws "No events matching pattern 'P'" when a glob matches nothing.
std::string expand_wildcards(std::string_view list, const std::vector<std::string>& sorted_tracepoints);

}  // namespace perfprof::event
