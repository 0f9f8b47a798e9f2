#include "sched/roles.h"

namespace perfprof::sched {

const char* event_name(Role role) {
    switch (role) {
        case Role::Wakeup:
            return "sched_wakeup";
        case Role::WakeupNew:
            return "sched_wakeup_new";
        default:
            return "sched_switch";
    }
}

unsigned Selection::reportable() const {
    if (sleeps_only())
        return (interruptible.value_or(false) ? 1u << kS : 0) | (uninterruptible ? 1u << kD : 0);
    unsigned rows = 1u << kD | 1u << kT | 1u << kt | 1u << kI;
    if (interruptible.value_or(true)) rows |= 1u << kS;
    return rows;
}

std::string Selection::state_filter() const {
    const bool s = interruptible.value_or(false), d = uninterruptible;
    std::string f;
    if (s) f = "prev_state==1";
    if (d) f += std::string(s ? "||" : "") + "prev_state==2||prev_state==130";
    return f;
}

// Modes (SPEC §4.4.2): 0 everything; 1 the selected tasks, both sides of a switch apart; 2 S/D
// sleeps of everyone; 3 S/D sleeps of the selected tasks, and (unlike SPEC's) their switch-ins,
// so that a sleep whose wake-up the kernel did not report ends at its switch-in; everyone's
// switch-ins would cost mode 2 every switch.
std::vector<Role> Selection::roles() const {
    const bool sd = sleeps_only();
    std::vector<Role> r;
    if (!sd && !filtered) r.push_back(Role::Switch);
    if (sd || filtered) r.push_back(Role::SwitchPrev);
    if (filtered) r.push_back(Role::SwitchNext);
    r.push_back(Role::Wakeup);
    if (!sd) r.push_back(Role::WakeupNew);
    return r;
}

std::string role_filter(Role role, const Selection& sel, const std::string& state,
                        const std::function<std::string(const std::string& side)>& tasks) {
    switch (role) {
        case Role::Switch:
            return "";
        case Role::SwitchPrev:
            if (!sel.filtered) return state;
            return state.empty() ? tasks("prev_") : "(" + state + ")&&(" + tasks("prev_") + ")";
        case Role::SwitchNext:
            return tasks("next_");
        case Role::Wakeup:
        case Role::WakeupNew:
            return sel.filtered ? tasks("") : "";
    }
    return "";
}

namespace {

// pids and prev_state (a long) are signed whatever the format says.
int64_t read_int(const Sample& s, const filter::RecordField& f) {
    return f.read_or(s.raw, s.raw_size, -1);
}

}  // namespace

void feed(TaskStates& states, Role role, const SchedFields& f, const Sample& s) {
    switch (role) {
        case Role::Switch:
            states.switched_out(s, read_int(s, f.prev_pid), uint64_t(read_int(s, f.prev_state)));
            states.switched_in(s, read_int(s, f.next_pid));
            break;
        case Role::SwitchPrev:
            states.switched_out(s, read_int(s, f.prev_pid), uint64_t(read_int(s, f.prev_state)));
            break;
        case Role::SwitchNext:
            states.switched_in(s, read_int(s, f.next_pid));
            break;
        case Role::Wakeup:
            states.woken(s, read_int(s, f.wake_pid), false);
            break;
        case Role::WakeupNew:
            states.woken(s, read_int(s, f.wake_pid), true);
            break;
    }
}

}  // namespace perfprof::sched
