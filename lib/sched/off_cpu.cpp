#include "sched/off_cpu.h"

#include <linux/perf_event.h>

#include <algorithm>

#include "event/tracepoint.h"
#include "sched/task_states.h"
#include "tep/tep.h"
#include "unwind/call_graph.h"

namespace perfprof::sched {

namespace {

// Tasks not seen for this long lose their entry (a machine-wide run meets many short-lived
// threads); looked for at most once per this period of event time, and only past kManyTasks.
constexpr uint64_t kStaleNs = 10'000'000'000ull;
constexpr size_t kManyTasks = 4096;

}  // namespace

SwitchEvent switch_event(tep::Tep& tep, uint64_t sample_type, bool kernel, bool user, uint32_t dwarf_stack) {
    SwitchEvent e;
    e.spec = event::sampled_tracepoint(tep, "sched", "sched_switch", sample_type | PERF_SAMPLE_RAW);
    e.prev_state = event::tp_field(e.spec.tp, "prev_state");
    e.spec.attr.context_switch = 1;
    // The idle task leaving is a CPU waking up, not a wait ending.
    e.spec.filter = "prev_pid != 0";
    unwind::request_stacks(e.spec.attr, kernel, user, dwarf_stack);
    return e;
}

std::string_view off_cpu_state(uint64_t prev_state) {
    // sched_switch reports TASK_REPORT_MAX (0x100) for a preempted task, the state index bit
    // otherwise (6.x); older kernels gave 0 for a preempted task.
    if ((prev_state & 0x100) || (prev_state & 0xff) == 0) return "R";
    if (const int row = row_of_state(prev_state & 0xff); row >= 0) {
        const std::string_view name = kRowName[row];  // "S ": padded for task-state's table
        return name.substr(0, name.find(' '));
    }
    switch (prev_state & 0xff) {
        case 0x10:  // EXIT_DEAD
        case 0x20:  // EXIT_ZOMBIE
            return {};
        case 0x40:
            return "P";
        default:
            return "?";
    }
}

void OffCpu::switched_out(const Sample& s, uint64_t prev_state) {
    if (s.tid == 0) return;  // the idle task: idle is not off-CPU
    auto [it, fresh] = tasks_.try_emplace(s.tid);
    Task& t = it->second;
    if (t.open) {
        // Out again without coming back: its switch-in was lost. It ran at most until now.
        ++missing_;
        end(s.tid, t, s.time);
    }
    t.pid = s.pid;
    t.cpu = s.cpu;
    t.last = s.time;
    newest_ = std::max(newest_, s.time);
    const std::string_view state = off_cpu_state(prev_state);
    if (state.empty()) {
        // Leaving for good: nothing to wait for, and the entry is of no further use.
        tasks_.erase(it);
        return;
    }
    t.open = true;
    ++open_;
    t.state = state;
    t.start = s.time;
    t.chain.assign(s.callchain, s.callchain + (s.callchain ? s.callchain_nr : 0));
    if (fresh && tasks_.size() > kManyTasks && s.time - last_sweep_ > kStaleNs) sweep(s.time);
}

void OffCpu::left(uint32_t tid, uint64_t time) {
    newest_ = std::max(newest_, time);
    auto it = tasks_.find(tid);
    if (it != tasks_.end() && it->second.open && time > it->second.start) it->second.start = time;
}

uint64_t OffCpu::on_cpu(uint32_t tid, uint64_t ns) {
    if (!cfg_.period_ns) return ns;
    return units(tasks_.try_emplace(tid).first->second, ns);
}

uint64_t OffCpu::units(Task& t, uint64_t ns) const {
    if (!cfg_.period_ns) return ns;
    const uint64_t total = t.carry + ns;
    t.carry = total % cfg_.period_ns;
    return total / cfg_.period_ns;
}

void OffCpu::switched_in(uint32_t tid, uint64_t time) {
    newest_ = std::max(newest_, time);
    auto it = tasks_.find(tid);
    if (it == tasks_.end()) return;  // never seen leaving (off CPU since before the run)
    it->second.last = time;
    if (it->second.open) end(tid, it->second, time);
}

void OffCpu::ran(uint32_t tid, uint64_t time) {
    newest_ = std::max(newest_, time);
    auto it = tasks_.find(tid);
    if (it == tasks_.end() || !it->second.open) return;
    Task& t = it->second;
    // A sample older than the switch-out (delivered out of order) says nothing of this wait.
    if (time <= t.start) return;
    ++missing_;
    t.last = time;
    end(tid, t, time);
}

void OffCpu::end(uint32_t tid, Task& t, uint64_t time) {
    t.open = false;
    --open_;
    const uint64_t ns = time > t.start ? time - t.start : 0;
    if (ns == 0 || ns < cfg_.min_ns) return;
    Wait w;
    w.pid = t.pid;
    w.tid = tid;
    w.cpu = t.cpu;
    w.state = t.state;
    w.start = t.start;
    w.ns = ns;
    w.units = units(t, ns);
    w.chain = t.chain;
    sink_(w);
}

void OffCpu::clear() {
    for (auto& [tid, t] : tasks_) t.open = false;
    open_ = 0;
}

void OffCpu::finish(uint64_t now) {
    if (!now) now = newest_;
    for (auto& [tid, t] : tasks_) {
        if (t.open && now > t.start) end(tid, t, now);
        t.open = false;
    }
    open_ = 0;
}

void OffCpu::sweep(uint64_t now) {
    last_sweep_ = now;
    for (auto it = tasks_.begin(); it != tasks_.end();) {
        if (!it->second.open && now - it->second.last > kStaleNs)
            it = tasks_.erase(it);
        else
            ++it;
    }
}

}  // namespace perfprof::sched
