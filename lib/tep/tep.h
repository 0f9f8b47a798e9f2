// The libtraceevent handle: tracepoint formats loaded on demand from tracefs, and the
// rendering of a record's INFO text (SPEC §3.9).
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
    Tep();
    ~Tep();
    Tep(const Tep&) = delete;
    Tep& operator=(const Tep&) = delete;

    // The format of sys:name, parsed from tracefs on first use. Throws Error
    // "sys:name not found" when the kernel has no such tracepoint.
    tep_event* event(std::string_view sys, std::string_view name);

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
