// Native INFO renderers for the few events whose libtraceevent rendering dominates the CPU of a
// storm: sched_switch and sched_wakeup as libtraceevent's sched_switch plugin prints them.
// tep_print_event finds every field by name (strcmp over the field list) and formats through
// vsnprintf, about 80 % of `trace -e sched:sched_switch`'s CPU; here the offsets are found once.
// Tep uses a renderer only after it printed a set of probe records exactly as tep_print_event
// does on this machine (a missing or different plugin leaves the generic path in place).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <event-parse.h>
}

namespace perfprof::tep {

struct FastInfo {
    enum class Kind : uint8_t { None, SchedSwitch, SchedWakeup };
    struct Field {
        uint16_t offset = 0, size = 0;  // size 0: absent
    };
    Kind kind = Kind::None;
    uint32_t min_size = 0;  // the record bytes the fields need
    // SchedSwitch: prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio.
    // SchedWakeup: comm, pid, prio, success, target_cpu (the last two optional).
    Field f[7];
};

// The renderer the layout of `ev` allows (Kind::None when it is not one of ours, or a field
// has an unexpected size). Pure: it does not check that the output matches libtraceevent's.
FastInfo plan_fast_info(tep_event& ev);

// Appends the INFO text of `raw` (a record of the planned event) to `out`; false, appending
// nothing, when the record is too short.
bool render_fast_info(const FastInfo& fi, const void* raw, uint32_t size, std::string& out);

// Records of event `type` laid out as `fi` says, covering every state bit, pid and priority
// extremes and comm lengths: what Tep compares with tep_print_event before trusting `fi`.
std::vector<std::vector<uint8_t>> fast_info_probes(const FastInfo& fi, uint16_t type);

}  // namespace perfprof::tep
