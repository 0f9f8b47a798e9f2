// Native INFO renderers: sched_switch and sched_wakeup as libtraceevent's sched_switch plugin
// prints them, and the print fmts made only of fields, casts of fields and __get_str() under
// plain printf conversions (sched_waking, sched_migrate_task, raw_syscalls, syscalls:*, ...).
// tep_print_event finds every field by name (strcmp over the field list) and formats through
// vsnprintf, about 80 % of `trace -e sched:sched_switch`'s CPU; here the offsets are found once.
// Tep uses a renderer only after it printed a set of probe records exactly as tep_print_event
// does on this machine (a missing or different plugin leaves the generic path in place).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <event-parse.h>
}

namespace perfprof::tep {

struct FastInfo {
    enum class Kind : uint8_t { None, SchedSwitch, SchedWakeup, Format };
    struct Field {
        uint16_t offset = 0, size = 0;  // size 0: absent
    };
    // Format: one piece of the print fmt, its literal text and then one conversion or none.
    struct Op {
        enum class Conv : uint8_t {
            None,    // literal only
            Int,     // plain %d / %i (any length): our own digits
            Uint,    // plain %u (any length)
            Printf,  // any other d i u o x X: snprintf with `spec`
            Str,     // %s of a char array field
            DynStr,  // %s of __get_str(field)
        };
        std::string text, spec;  // spec: the conversion as printf takes it ("%08lx")
        Conv conv = Conv::None;
        int8_t length = 0;  // printf length: -2 hh, -1 h, 0 none, 1 l/z, 2 ll/L
        Field field;
        uint64_t mask = ~uint64_t(0);  // a cast to (unsigned) int keeps the low 32 bits
        bool relative = false;         // DynStr: __rel_loc, offset from the field's end
    };
    Kind kind = Kind::None;
    uint32_t min_size = 0;  // the record bytes the fields need
    // SchedSwitch: prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio.
    // SchedWakeup: comm, pid, prio, success, target_cpu (the last two optional).
    Field f[7];
    std::vector<Op> ops;  // Format
};

// A field as libtraceevent reads it (tep_read_number): unsigned, of its size, so a pid of -1
// is 4294967295 to a "%lld".
inline uint64_t read_field(const uint8_t* raw, FastInfo::Field f) {
    switch (f.size) {
        case 1:
            return raw[f.offset];
        case 2: {
            uint16_t v;
            std::memcpy(&v, raw + f.offset, 2);
            return v;
        }
        case 4: {
            uint32_t v;
            std::memcpy(&v, raw + f.offset, 4);
            return v;
        }
        default: {
            uint64_t v;
            std::memcpy(&v, raw + f.offset, 8);
            return v;
        }
    }
}

// The renderer the layout of `ev` allows (Kind::None when it is not one of ours, or a field
// has an unexpected size). Pure: it does not check that the output matches libtraceevent's.
FastInfo plan_fast_info(tep_event& ev);
// The Format part of it (fast_format.cpp): Kind::None unless every argument of the print fmt
// is supported.
FastInfo compile_print_fmt(tep_event& ev);

// Appends the INFO text of `raw` (a record of the planned event) to `out`; false, appending
// nothing, when the record is too short (or, for Format, a dynamic string lies outside it).
bool render_fast_info(const FastInfo& fi, const void* raw, uint32_t size, std::string& out);
bool render_format(const FastInfo& fi, const uint8_t* raw, uint32_t size, std::string& out);

// Records of event `type` laid out as `fi` says, covering every state bit, pid and priority
// extremes and comm lengths: what Tep compares with tep_print_event before trusting `fi`.
std::vector<std::vector<uint8_t>> fast_info_probes(const FastInfo& fi, uint16_t type);

}  // namespace perfprof::tep
