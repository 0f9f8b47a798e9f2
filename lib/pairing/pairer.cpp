#include "pairing/pairer.h"

#include <algorithm>
#include <string>

namespace perfprof::pairing {

namespace {

bool is_sched(const EventSpec& e, const char* name) {
    return e.sys == "sched" && e.name == name;
}

bool is_wakeup(const EventSpec& e) {
    return is_sched(e, "sched_wakeup") || is_sched(e, "sched_wakeup_new") || is_sched(e, "sched_waking");
}

}  // namespace

Pairer::Pairer(Env& env, size_t planned)
    : env_(env), planned_(planned), pair_of_(planned * planned, -1), seen_(planned) {}

void Pairer::add_pair(const TraceEvent* a, const TraceEvent* b) {
    int& s = slot(pair_of_, a, b);
    if (s >= 0) return;
    s = int(env_.pairs.size());
    env_.pairs.push_back({s, a, b});
}

void Pairer::add_positions(const std::vector<std::vector<TraceEvent*>>& positions, bool cycle) {
    const size_t n = positions.size();
    for (size_t k = 0; k + 1 < n + (cycle ? 1 : 0); k++)
        for (TraceEvent* a : positions[k])
            for (TraceEvent* b : positions[(k + 1) % n]) add_pair(a, b);
    for (size_t k = 0; k < n; k++)
        for (TraceEvent* t : positions[k]) {
            t->need_find_prev = k != 0 || cycle;
            t->need_backup = k != n - 1 || cycle;
        }
}

void Pairer::start(const std::vector<TraceEvent*>& by_index, const EventPlan& plan, Impl& impl,
                   Timeline* timeline, bool keyed, bool order) {
    impl_ = &impl;
    timeline_ = timeline;
    keyed_ = keyed;
    order_ = order;
    setup_wakeup_trick(by_index, plan);
    setup_missed_wakeups(by_index, plan);
}

// SPEC §4.6.3 step 6: a wake-up of the waker itself, or of the task already running on the
// target CPU, is never followed by a switch-in: not backed up.
void Pairer::setup_wakeup_trick(const std::vector<TraceEvent*>& by_index, const EventPlan& plan) {
    for (const TraceEvent* t : by_index) {
        const EventSpec& e = plan.events[size_t(t->index)];
        if (is_sched(e, "sched_wakeup") && !t->untraced && t->need_backup) {
            wakeup_index_ = t->index;
            wake_pid_ = filter::RecordField::integer(e.fields, "pid");
            wake_cpu_ = filter::RecordField::integer(e.fields, "target_cpu");
            common_pid_ = filter::RecordField::integer(e.fields, "common_pid");
        } else if (is_sched(e, "sched_switch") && e.filter.empty() && switch_index_ < 0) {
            switch_index_ = t->index;
            next_pid_ = filter::RecordField::integer(e.fields, "next_pid");
        }
    }
}

// A position of wake-ups only between two with sched_switch events: a switch-out of the first
// and a switch-in of the last may pair over a wake-up that was not recorded.
void Pairer::setup_missed_wakeups(const std::vector<TraceEvent*>& by_index, const EventPlan& plan) {
    std::vector<std::vector<const TraceEvent*>> positions;
    for (const TraceEvent* t : by_index) {
        if (t->untraced || t->position < 0) continue;
        if (size_t(t->position) >= positions.size()) positions.resize(size_t(t->position) + 1);
        positions[size_t(t->position)].push_back(t);
    }
    auto spec = [&](const TraceEvent* t) -> const EventSpec& { return plan.events[size_t(t->index)]; };
    for (size_t k = 0; k + 2 < positions.size(); k++) {
        const auto& mid = positions[k + 1];
        if (!std::all_of(mid.begin(), mid.end(), [&](const TraceEvent* t) { return is_wakeup(spec(t)); }))
            continue;
        for (const TraceEvent* out : positions[k]) {
            if (!is_sched(spec(out), "sched_switch")) continue;
            const int pair = slot(pair_of_, out, mid.front());
            for (const TraceEvent* in : positions[k + 2]) {
                if (!is_sched(spec(in), "sched_switch") || slot(pair_of_, out, in) >= 0) continue;
                if (sleep_pair_of_.empty()) {
                    sleep_pair_of_.assign(planned_ * planned_, -1);
                    prev_state_.resize(planned_);
                }
                slot(sleep_pair_of_, out, in) = pair;
                prev_state_[size_t(out->index)] =
                    filter::RecordField::integer(spec(out).fields, "prev_state");
            }
        }
    }
}

bool Pairer::unnecessary_wakeup(const Sample& s) const {
    const int64_t pid = wake_pid_.read_or(s.raw, s.raw_size, -1);
    if (pid == common_pid_.read_or(s.raw, s.raw_size, -1)) return true;
    if (switch_index_ < 0) return false;
    const int64_t cpu = wake_cpu_.read_or(s.raw, s.raw_size, -1);
    return cpu >= 0 && size_t(cpu) < running_.size() && running_[size_t(cpu)] == pid && pid > 0;
}

int Pairer::missed_wakeup_pair(const Backup& b, const Sample& prev, const TraceEvent& te) const {
    if (sleep_pair_of_.empty()) return -1;
    const int pair = sleep_pair_of_[size_t(b.ev->index) * planned_ + size_t(te.index)];
    if (pair < 0) return -1;
    // A sleep: S, D, T, t, parked or idle; not runnable (0, or 0x100 preempted), not dead.
    const int64_t state = prev_state_[size_t(b.ev->index)].read_or(prev.raw, prev.raw_size, 0);
    return (state & 0xff) && !(state & (16 | 32)) ? pair : -1;
}

void Pairer::process(const TraceEvent& te, const Sample& s, uint64_t key, int64_t role,
                     Timeline::Node* node) {
    ++seen_[size_t(te.index)];
    if (s.event_index == switch_index_ && switch_index_ >= 0) {
        const int64_t next = next_pid_.read_or(s.raw, s.raw_size, -1);
        if (s.cpu != UINT32_MAX) {
            if (s.cpu >= running_.size()) running_.resize(s.cpu + 1, -1);
            running_[s.cpu] = next;
        }
    }
    // Inside a loss window neither half is trusted; at its start a sample may still end a
    // pair but is not kept (SPEC §4.6.12).
    bool in_loss = false, at_loss = false;
    if (lost_end_) {
        if (s.time >= lost_end_) {
            lost_start_ = lost_end_ = 0;
        } else if (s.time > lost_start_) {
            in_loss = true;
        } else if (s.time == lost_start_) {
            at_loss = true;
        }
    }
    if (te.need_find_prev && (role & 2) && !in_loss) {
        auto it = backups_.find(key);
        if (it != backups_.end() && it->second.live) {
            Backup& b = it->second;
            if (b.time <= s.time) {
                const Sample prev = b.node ? Timeline::sample(b.node) : b.copy.sample();
                int p = slot(pair_of_, b.ev, &te);
                if (p < 0 && (p = missed_wakeup_pair(b, prev, te)) >= 0) ++closed_at_switch_in_;
                if (p >= 0) {
                    impl_->two(env_.pairs[size_t(p)], prev, s, key);
                    ++paired_;
                }
            }
            release(b);
        }
    }
    if (!te.need_backup || !(role & 1) || in_loss || at_loss) return;
    if (s.event_index == wakeup_index_ && unnecessary_wakeup(s)) {
        ++unnecessary_;
        return;
    }
    Backup& b = backups_[key];
    if (b.live) {
        if (b.time > s.time) return;  // out of order: the newer one stays
        release(b);                   // replaced: the older one is dropped unpaired
    }
    b.live = true;
    b.ev = &te;
    b.time = s.time;
    b.instance = s.instance;
    if (node) {
        b.node = node;
        timeline_->pin(node);
    } else {
        b.copy.assign(s);
    }
    ++live_;
    if (backups_.size() > 4096 && backups_.size() > 4 * live_) sweep();
}

void Pairer::lost(const LostRange& l, uint64_t newest) {
    const uint64_t last = std::max(newest, l.start);
    for (auto& [key, b] : backups_) {
        if (!b.live) continue;
        // Instance keys: only the instance that lost events (SPEC §4.6.12).
        if (!keyed_ && b.instance != l.instance) continue;
        drop(key, b, Remain::Lost, last);
    }
    if (order_) {
        lost_start_ = l.start;
        lost_end_ = std::max(l.end, l.start);
    }
}

void Pairer::finish(uint64_t newest) {
    for (auto& [key, b] : backups_)
        if (b.live) drop(key, b, Remain::Exit, newest);
}

void Pairer::close(uint64_t key, uint64_t time) {
    auto it = backups_.find(key);
    if (it != backups_.end() && it->second.live && it->second.time <= time) drop(key, it->second, Remain::Freed, time);
}

void Pairer::unpin_older(uint64_t newest, uint64_t horizon) {
    for (auto& [key, b] : backups_) {
        if (!b.live || !b.node || b.time + horizon > newest) continue;
        b.copy.assign(Timeline::sample(b.node));
        timeline_->unpin(b.node);
        b.node = nullptr;
        ++unpinned_;
    }
}

void Pairer::notes(FILE* out, bool by_thread) const {
    if (closed_at_switch_in_)
        std::fprintf(out,
                     "multi-trace: %llu sleep%s ended without a wake-up record (not reported by the kernel); "
                     "paired with the switch-in, run-queue wait included\n",
                     (unsigned long long)closed_at_switch_in_, closed_at_switch_in_ == 1 ? "" : "s");
    if (paired_) return;
    std::string line = "multi-trace: nothing paired; events seen:";
    bool sched = false;
    for (const auto& e : env_.events) {
        if (e->untraced || e->position < 0 || e->index < 0) continue;
        line += (line.back() == ':' ? " " : ", ") + e->full() + " " + std::to_string(seen_[size_t(e->index)]);
        sched |= e->sys == "sched";
    }
    std::fprintf(out, "%s\n", line.c_str());
    if (by_thread && sched)
        std::fprintf(
            out,
            "multi-trace: attached to tasks, only the events they raise are seen: not the wake-ups "
            "of them nor the switches to them, which other tasks raise; watch the CPUs (no -p, -t or "
            "command) with filters on the pid fields instead\n");
}

size_t Pairer::bytes() const {
    size_t n = 0;
    for (const auto& [key, b] : backups_) n += b.copy.bytes();
    return n;
}

void Pairer::release(Backup& b) {
    if (b.node) timeline_->unpin(b.node);
    b.node = nullptr;
    b.live = false;
    --live_;
}

void Pairer::drop(uint64_t key, Backup& b, Remain why, uint64_t last) {
    const Sample s = b.node ? Timeline::sample(b.node) : b.copy.sample();
    impl_->remaining(s, key, why, last);
    release(b);
}

void Pairer::sweep() {
    for (auto it = backups_.begin(); it != backups_.end();)
        it = it->second.live ? std::next(it) : backups_.erase(it);
}

}  // namespace perfprof::pairing
