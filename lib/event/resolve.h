// Event resolution (SPEC §2.3, §2.4): parsed event items → tracepoints, perf k/uprobes or nested
// profilers, with the attr bits that identify them, their record fields (§2.7.3) and the format
// text the `help` word prints (§1.10).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "event/event_spec.h"
#include "filter/expr.h"
#include "perf-prof/options.h"
#include "tep/tep.h"

namespace perfprof::event {

struct Resolved {
    EventItem item;  // as parsed: kind, sys, name, path, filter, attrs, text
    // Real events (item.kind != Kind::Profiler):
    perf_event_attr attr{};   // type and config set; for probes also config2 = probe_offset and the
                              // retprobe bit in config; config1 left 0 (the session points it at `probe`)
    std::string probe;        // kprobe function or uprobe PATH as written (quotes removed)
    tep_event* tp = nullptr;  // tracepoint format (nullptr for probes); owned by the Tep, lives as long
    std::vector<filter::Field> fields;  // every field incl. common_*, as §2.7.3 describes
    std::string format;  // the tracefs `format` file text, or the synthetic probe format of §1.10 step 4
    // "kmem:kmalloc_node" when the kernel lacks that event and `item` names the one it was merged
    // into, filtered (event/merged_events.h); empty otherwise.
    std::string merged_from;
};

// §2.4 wildcard expansion against tep::tracepoint_list() (with verbose > 0 printed on stdout as
// "Wildcard expansion: '{before}' -> '{after}'"), §2.2 parse with `profilers`, the names an
// event list may nest (the caller's registry: perfprof::profiler_names(); lib/event does not
// reach up into it), §2.3 resolution of every item, in list order. Throws
// perfprof::Error with the SPEC §11 texts ("{sys}:{name} not found", "profiler {name} not found",
// "No events matching pattern '{p}'", ...). An event older kernels had, merged since, resolves to
// its merged event (with verbose > 0 a note on stdout says so).
std::vector<Resolved> resolve_event_list(std::string_view list, tep::Tep& tep, int verbose,
                                         const std::vector<std::string>& profilers);

// The -e occurrences of `opt` as one list, joined with ',' (SPEC §10 #4: upstream used only
// the first).
std::string joined_lists(const Options& opt);

// §2.3 for one parsed item. `profilers` are the registered names (a profiler candidate that is
// no tracepoint becomes a nested profiler event).
Resolved resolve_event(const EventItem& item, tep::Tep& tep, const std::vector<std::string>& profilers);

// ---- building blocks, exposed for tests and for profilers that build events themselves ----

// A dynamic PMU (kprobe, uprobe) under `devices` (/sys/bus/event_source/devices): its type and
// the config bit that makes a return probe ("format/retprobe" reads "config:N").
struct ProbePmu {
    uint32_t type = 0;
    int retprobe_bit = -1;  // -1: the PMU has no return probes
};
constexpr const char* kPmuDevices = "/sys/bus/event_source/devices";
std::optional<ProbePmu> probe_pmu(const std::string& pmu, const std::string& devices = kPmuDevices);

// The fields of a tracepoint format: common fields first, then the event's own, in file order.
std::vector<filter::Field> tracepoint_fields(const tep_event& tp);

// The fixed record layout of k/uprobe events: the 8-byte common header, then __probe_ip
// (entry) or __probe_func and __probe_ret_ip (return).
std::vector<filter::Field> probe_fields(bool retprobe);

// The synthetic `format` text of a k/uprobe (§1.10 step 4), shaped like a tracefs format file:
// "name: {func}", "ID: perf {kprobe|kretprobe|uprobe|uretprobe}", the fields, "print fmt: ...".
std::string probe_format(Kind kind, std::string_view func);

}  // namespace perfprof::event
