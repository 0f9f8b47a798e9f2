// libFuzzer target for the event specification language (lib/event/event_spec.h, SPEC §2.1–§2.5).
//
// The input is an EVENT-LIST as given to -e. It goes through parse_event_list, and through
// expand_wildcards against a small sorted tracepoint list followed by parse_event_list of the
// expansion, as the resolver does. perfprof::Error is an expected outcome; anything else (crash,
// sanitizer report, hang, other exception, a broken invariant below) is a finding.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "event/event_spec.h"
#include "perf-prof/error.h"

namespace {

const std::vector<std::string> kProfilers = {"signal",     "trace",    "profile",
                                             "task-state", "kmemleak", "multi-trace"};

// Sorted, as `perf-prof list` gives them.
const std::vector<std::string> kTracepoints = {
    "irq:irq_handler_entry",  "irq:irq_handler_exit",  "irq:softirq_entry",
    "irq:softirq_exit",       "irq:softirq_raise",     "kmem:kfree",
    "kmem:kmalloc",           "sched:sched_switch",    "sched:sched_wakeup",
    "sched:sched_wakeup_new", "signal:signal_deliver", "signal:signal_generate",
};

// Known slow path, reported: core::parse_cpu_list expands every range of a cpus= value into a
// vector (ids up to 1<<20) and sorts it. "cpus=0-1048576" costs ~65 ms at -O2 but ~3 s under
// ASan+UBSan, which trips -timeout=2; a glob multiplies it by the number of matches
// ("*:*//cpus=0-1048576/" on a real machine: ~2000 tracepoints x 65 ms and 4 MB each). Lists whose
// "A-B" ranges add up to more than 200k ids are not parsed until that parser caps ranges (e.g. at
// the kernel's NR_CPUS limit of 8192). EVENT_SPEC_FUZZ_ALL_CPU_RANGES=1 parses them anyway.
bool huge_cpu_ranges(std::string_view s) {
    static const bool all = std::getenv("EVENT_SPEC_FUZZ_ALL_CPU_RANGES") != nullptr;
    if (all) return false;
    uint64_t total = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '-' || i == 0 || !std::isdigit((unsigned char)s[i - 1])) continue;
        size_t a = i;
        while (a > 0 && std::isdigit((unsigned char)s[a - 1])) --a;
        size_t b = i + 1;
        while (b < s.size() && std::isdigit((unsigned char)s[b])) ++b;
        auto value = [&](size_t from, size_t to) {
            uint64_t v = 0;
            for (size_t k = from; k < to; ++k)
                v = std::min<uint64_t>(v * 10 + uint64_t(s[k] - '0'), 1u << 21);
            return v;
        };
        uint64_t lo = value(a, i), hi = value(i + 1, b);
        if (hi > lo) total += hi - lo;
    }
    return total > 200000;
}

void check(bool ok) {
    if (!ok) std::abort();
}

void parse(std::string_view list) {
    std::vector<perfprof::event::EventItem> items = perfprof::event::parse_event_list(list, kProfilers);
    check(!items.empty());
    for (const auto& it : items) {
        using perfprof::event::Kind;
        check(it.attrs.max_stack >= 0 && it.attrs.max_stack <= 127);
        if (it.attrs.max_stack) check(it.attrs.stack);
        if (it.kind == Kind::Profiler) {
            check(it.name.empty() && !it.sys.empty());
        } else {
            check(!it.sys.empty() &&
                  (!it.name.empty() || it.kind == Kind::Uprobe || it.kind == Kind::Uretprobe));
        }
        if (it.kind == Kind::Uprobe || it.kind == Kind::Uretprobe)
            check(!it.name.empty() && !it.path.empty());
        if (!it.has_filter) check(it.filter.empty());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view list(reinterpret_cast<const char*>(data), size);
    try {
        if (!huge_cpu_ranges(list)) parse(list);
    } catch (const perfprof::Error&) {
    }

    try {
        (void)perfprof::event::split_protected(list, '/');
        (void)perfprof::event::strip_quotes(list);
        (void)perfprof::event::is_glob(list);
    } catch (const perfprof::Error&) {
    }

    std::string expanded;
    try {
        expanded = perfprof::event::expand_wildcards(list, kTracepoints);
    } catch (const perfprof::Error&) {
        return 0;
    }
    // Without a glob character nothing is expanded: the list must come back unchanged, empty
    // items included (they are errors for parse_event_list and must stay errors).
    if (!perfprof::event::is_glob(list)) check(expanded == list);
    if (huge_cpu_ranges(expanded)) return 0;
    try {
        parse(expanded);
    } catch (const perfprof::Error&) {
    }
    return 0;
}
