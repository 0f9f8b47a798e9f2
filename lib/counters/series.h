// The per-slot series of hrcount and stat (SPEC-PROFILERS §P9, §P10): H slots per printed
// round, 2H kept per node (instance or 0, event) so one round fills while the other waits for
// the slowest instance; the late-timer advance, round completion across instances, the reset
// rule and the output lines. These are counters per time slot, not key/value rows: lib/aggregate
// (top, num-dist) does not fit them, so nothing of it is reused here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfprof::counters {

// H = interval/period when the interval is longer, else period/interval (at least 1).
uint64_t slots_per_round(uint64_t interval_ns, uint64_t period_ns);

// The member deltas of one group read: `values` are the group's values in read order (the
// leader first), `present` the event indexes of the members opened on that instance, in
// group order. `prev` (one per event, plus the leader at the end) keeps the last values.
// Fills `deltas` (one per event, 0 for absent ones) and returns the leader's delta.
uint64_t group_deltas(const std::vector<uint64_t>& values, const std::vector<int>& present,
                      std::vector<uint64_t>& prev, std::vector<uint64_t>& deltas, bool& first);

class Series {
public:
    // `names`: alias or sys:name per event; `labels`: "[000] " per instance (or "[  1234] ");
    // `present[i][e]`: event e is opened on instance i.
    Series(std::vector<std::string> names, std::vector<std::string> labels,
           std::vector<std::vector<bool>> present, uint64_t slots, uint64_t period_ns, bool perins);

    // One read of `instance`: the leader's (cpu-clock) delta and the members' deltas. Returns
    // true when the timer was late (delta ≥ 2 periods): the position advanced first.
    bool add(int instance, uint64_t clock_delta, const std::vector<uint64_t>& deltas);

    // Appends every complete round (a WALL(now) line, then one line per node) to `out`;
    // `wall` is the WALL(now) string. Returns the number of rounds printed.
    int print_ready(const std::string& wall, std::string& out);

    // The reset rule: ≥ 2 instances, H ≥ 2 and the leading instance ≥ H/2 positions ahead
    // of the slowest. The caller prints "{WALL} hrcount reset", re-enables the leader and
    // calls clear().
    bool needs_reset() const;
    void clear();

    uint64_t slots() const { return h_; }
    uint64_t position(int instance) const { return pos_[size_t(instance)]; }
    uint64_t round() const { return round_; }

private:
    struct Node {
        int instance;  // -1 without --perins
        int event;
        std::vector<uint64_t> slot;  // 2H
        uint64_t sum = 0;
    };
    Node* node(int instance, int event);
    void print_round(std::string& out);

    std::vector<std::string> names_, labels_;
    std::vector<std::vector<bool>> present_;
    uint64_t h_, period_;
    bool perins_;
    std::vector<Node> nodes_;
    std::vector<uint64_t> pos_;
    uint64_t round_ = 0;
    uint64_t max_value_ = 0;  // the largest slot value ever seen: CW
    size_t name_width_ = 0;
};

}  // namespace perfprof::counters
