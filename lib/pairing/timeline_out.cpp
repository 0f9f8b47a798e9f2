#include "pairing/timeline_out.h"

#include "perf/proc_tasks.h"

namespace perfprof::pairing {

namespace {

// Above any pid_max (2^22): the pseudo process of the key tracks collides with no task.
constexpr uint32_t kKeyProcess = 1u << 23;

}  // namespace

TimelineOut::TimelineOut(std::unique_ptr<Impl> inner, Env& env, const std::string& path, bool thread_keys)
    : inner_(std::move(inner)),
      env_(env),
      writer_(path),
      tracks_(writer_, env.ctx, perf::tgid_of),
      thread_keys_(thread_keys) {}

std::pair<uint32_t, uint32_t> TimelineOut::track(uint64_t key) {
    if (thread_keys_) return {tracks_.pid(uint32_t(key)), uint32_t(key)};
    // Keys are 64-bit (addresses, key= values); a track id is 32: fold the halves.
    const uint32_t tid = uint32_t(key) ^ uint32_t(key >> 32);
    if (keys_.size() >= output::TimelineTracks::kMaxThreads) keys_.clear();
    if (keys_.insert(key).second) {
        name_ = "key ";
        name_ += std::to_string(key);
        tracks_.name_track(
            kKeyProcess, env_.key_name.empty() ? "multi-trace" : "multi-trace " + env_.key_name, tid, name_);
    }
    return {kKeyProcess, tid};
}

bool Impl::slice_name(const Pair& p, const Sample& ev1, const Sample& ev2, std::string& name) const {
    (void)ev1, (void)ev2;
    name = p.ev1 ? p.ev1->display() : "?";
    name += " -> ";
    name += p.ev2 ? p.ev2->display() : "?";
    return true;
}

void TimelineOut::two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) {
    inner_->two(p, ev1, ev2, key);
    if (!inner_->slice_name(p, ev1, ev2, name_)) return;
    const auto [pid, tid] = track(key);
    writer_.complete(name_, pid, tid, ev1.time, ev2.time - ev1.time);
    writer_.arg_u("key", key);
    // Both events with their ids; a nested profiler's sample (from) has no fields of its own.
    output::append_event_arg(writer_, "event1", p.ev1 ? p.ev1->full() : std::string(), ev1, true, !ev1.from);
    output::append_event_arg(writer_, "event2", p.ev2 ? p.ev2->full() : std::string(), ev2, true, !ev2.from);
    writer_.end();
}

void TimelineOut::printed(const Sample& s) {
    if (s.from || !s.event) {
        name_ = "nested";
    } else {
        name_ = s.event->sys;
        name_ += ':';
        name_ += s.event->name;
    }
    writer_.instant(name_, tracks_.pid(s.pid, s.tid), s.tid, s.time);
    if (s.cpu != UINT32_MAX) writer_.arg_u("cpu", s.cpu);
    if (!s.from) output::append_field_args(writer_, s);
    writer_.end();
}

void TimelineOut::finish() {
    inner_->finish();
    writer_.close();
}

}  // namespace perfprof::pairing
