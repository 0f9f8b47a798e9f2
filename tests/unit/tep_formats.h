// Hand-written tracepoint formats for unit tests that feed a Tep: the common fields every
// format starts with, and Linux 6.18's sched_switch and sched_wakeup fields.
#pragma once

#include <string>
#include <string_view>

#include "tep/tep.h"

namespace perfprof::unit {

inline constexpr char kSchedSwitchFields[] =
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";

inline constexpr char kSchedWakeupFields[] =
    "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n";

// Parses the format of sys:name (the common fields, then `fields`, then "print fmt: `print`")
// into `tep`; returns its event, or nullptr when libtraceevent refused it.
inline tep_event* parse_format(tep::Tep& tep, const char* sys, const char* name, int id,
                               std::string_view fields, std::string_view print) {
    std::string text = std::string("name: ") + name + "\nID: " + std::to_string(id) +
                       "\nformat:\n"
                       "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                       "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
                       "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
                       "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
    text.append(fields);
    text += "\nprint fmt: ";
    text.append(print);
    text += '\n';
    if (tep_parse_event(tep.handle(), text.data(), text.size(), sys) != TEP_ERRNO__SUCCESS) return nullptr;
    return tep_find_event_by_name(tep.handle(), sys, name);
}

}  // namespace perfprof::unit
