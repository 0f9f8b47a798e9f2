// multi-trace --timeline: each pair a slice ("ph":"X", from event1 to event2) on its key's
// track, with both events' fields as args, and the events --detail prints as instants. Keys
// that are thread ids (attached to threads, no key expression) use that thread's track; other
// keys (CPUs, key= values) get named tracks "key N" in a process of their own, "multi-trace".
// An Impl around the chosen one: every pair still goes to it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

#include "output/timeline.h"
#include "pairing/model.h"

namespace perfprof::pairing {

class TimelineOut final : public Impl {
public:
    TimelineOut(std::unique_ptr<Impl> inner, Env& env, const std::string& path, bool thread_keys);

    void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) override;
    void remaining(const Sample& ev1, uint64_t key, Remain why, uint64_t last) override {
        inner_->remaining(ev1, key, why, last);
    }
    void report() override { inner_->report(); }
    void finish() override;

    // An event printed (--detail's windows): an instant on its thread's track.
    void printed(const Sample& s);

private:
    // The track of `key`: its pid and tid.
    std::pair<uint32_t, uint32_t> track(uint64_t key);

    std::unique_ptr<Impl> inner_;
    Env& env_;
    output::TimelineWriter writer_;
    output::TimelineTracks tracks_;
    bool thread_keys_;
    std::unordered_set<uint64_t> keys_;  // named key tracks, bounded as the threads' are
    std::string name_;
};

}  // namespace perfprof::pairing
