// What each scheduler event task-state plans stands for (SPEC §4.4.2): the modes (everything, the
// selected tasks, S/D sleeps of everyone or of the selected tasks), the roles of the planned
// events, their kernel filters, and how a record of each role feeds TaskStates. Pure: the
// profiler gives the options, the field locations and a way to name the selected tasks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "filter/record_field.h"
#include "perf-prof/sample.h"
#include "sched/task_states.h"

namespace perfprof::sched {

// What a planned event stands for.
enum class Role : uint8_t {
    Switch,      // sched_switch, both sides (everything of everyone)
    SwitchPrev,  // sched_switch, the task switched out (filtered by its side, or by state)
    SwitchNext,  // sched_switch, the task switched in (filtered by its side)
    Wakeup,      // sched_wakeup
    WakeupNew,   // sched_wakeup_new
};

// The tracepoint of sched: an event in `role` is.
const char* event_name(Role role);

// The selection of -S/-D and of the tasks.
struct Selection {
    std::optional<bool> interruptible;  // -S (true) / --no-interruptible (false)
    bool uninterruptible = false;       // -D
    bool filtered = false;              // tasks selected (by --filter names or attached threads)

    // -S or -D: S/D sleeps only (the kernel filter passes no other switch-out).
    bool sleeps_only() const { return interruptible.value_or(false) || uninterruptible; }
    // The rows a sleep is reported in (bit per Row, SPEC §4.4.1): with -S/-D those; otherwise
    // D, T, t, I, and S unless --no-interruptible.
    unsigned reportable() const;
    // The prev_state condition of -S/-D ("" without them).
    std::string state_filter() const;
    // The events to plan, in plan order: sched_switch in its roles, then the wake-ups.
    std::vector<Role> roles() const;
    // Switch-ins are watched: they end sleeps whose wake-up record is missing.
    bool watches_switch_ins() const { return !sleeps_only() || filtered; }
};

// The kernel filter of an event in `role`: `tasks(side)` selects the tasks by the fields of a
// side ("prev_", "next_", "" for wake-ups); `state` is Selection::state_filter().
std::string role_filter(Role role, const Selection& sel, const std::string& state,
                        const std::function<std::string(const std::string& side)>& tasks);

// Where the fields the state machine reads are in sched_switch and sched_wakeup records.
struct SchedFields {
    filter::RecordField prev_pid, prev_state, next_pid, wake_pid;
};

// Feeds one record of an event in `role` to `states` (a sched_switch of Role::Switch is a
// switch-out, then a switch-in). Fields that cannot be read give pid -1, which is ignored.
void feed(TaskStates& states, Role role, const SchedFields& f, const Sample& s);

}  // namespace perfprof::sched
