// The libtraceevent handle: tracepoint formats loaded on demand from tracefs (or from a copy of
// its events directory: recorded formats for tests), and the rendering of a record's INFO text
// (SPEC §3.9).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include <event-parse.h>
}

#include "core/fd.h"
#include "tep/fast_info.h"

namespace perfprof::tep {

// The fixed head of every tracepoint record (the kernel's struct trace_entry).
struct CommonFields {
    uint16_t type;
    uint8_t flags;
    uint8_t preempt_count;
    int32_t pid;
};
bool read_common(const void* raw, uint32_t size, CommonFields& out);

class Tep {
public:
    // Formats from tracefs's events directory, found (and mounted) on first use.
    Tep();
    // Formats from `events_dir`/SYS/NAME/format (a tree laid out as tracefs's events/): plan()
    // against recorded formats without tracefs. Nothing of this Tep reads tracefs then.
    explicit Tep(std::string events_dir);
    ~Tep();
    Tep(const Tep&) = delete;
    Tep& operator=(const Tep&) = delete;

    // The format of sys:name, parsed from the events directory on first use. Throws Error
    // "sys:name not found" when the kernel has no such tracepoint.
    tep_event* event(std::string_view sys, std::string_view name);

    // The events directory: tracefs's events/ (mounting tracefs when needed), or the one given.
    const std::string& events_dir();
    // Whether sys:name is a tracepoint there: a directory with an `id` file and a readable
    // format (the test of `perf-prof list`). False for names that are not one plain entry.
    bool has_event(const std::string& sys, const std::string& name);
    // The text of sys:name's format file; throws Error naming the path when unreadable.
    std::string format_text(const std::string& sys, const std::string& name);
    // Every tracepoint there as "sys:name", sorted byte-wise (SPEC §1.12).
    std::vector<std::string> event_names();

    // Appends the print-format rendering (INFO) of a record to `out`; the record's
    // common_type selects the format, which must have been loaded with event(). The events
    // of fast_info.h are rendered natively once they proved to print as libtraceevent does.
    void render_info(const void* raw, uint32_t size, int cpu, uint64_t ts, std::string& out);
    // libtraceevent's rendering alone (what render_info's native renderers are checked against).
    void render_info_generic(const void* raw, uint32_t size, int cpu, uint64_t ts, std::string& out);
    // The native renderer render_info uses for events of `type` (Kind::None: libtraceevent's).
    const FastInfo& fast_info(uint16_t type);

    tep_handle* handle() { return tep_.get(); }

private:
    void init();

    std::string events_dir_;  // empty until tracefs is found (default constructor)
    core::CPtr<tep_handle, tep_free> tep_;
    tep_plugin_list* plugins_ = nullptr;
    trace_seq seq_{};
    struct FastSlot {
        bool known = false;
        FastInfo fi;
    };
    std::vector<FastSlot> fast_;  // by common_type
};

}  // namespace perfprof::tep
