// task-state's table (SPEC §4.4.5): the closed intervals summed per state row, for everyone or
// (--perins) per thread, and rendered with their quantiles at each -i tick and at exit; and the
// note on sleeps the kernel left without a wake-up record. Rendering resets the rows.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "output/latency.h"
#include "sched/task_states.h"

namespace perfprof::sched {

class StateTable {
public:
    explicit StateTable(bool per_thread) : per_thread_(per_thread) {}

    // `tid` spent `ns` in `row`; `threshold` (0 = none) counts the intervals above it.
    void add(uint32_t tid, int row, uint64_t ns, uint64_t threshold);
    // A row has data since the last render.
    bool any() const { return any_; }

    // Appends the table and resets it; nothing without data. `wall` is the time heading it,
    // `unit` "us" or "kcyc"; `comm` names a thread (--perins).
    void render(std::string_view wall, const char* unit,
                const std::function<std::string_view(uint32_t)>& comm, std::string& out);

private:
    using Rows = std::array<output::LatencyDist, kRows>;
    static void render_rows(const Rows& rows, std::string_view prefix, std::string& out);

    bool per_thread_;
    bool any_ = false;
    Rows rows_;
    std::unordered_map<uint32_t, Rows> threads_;  // --perins
};

// The lines under the table on sleeps that ended without a wake-up record (the kernel did not
// report it): `closed` were counted to their switch-in, `unmeasured` not at all;
// `switch_ins`: switch-ins are watched (then the unmeasured ones lacked a switch-in too).
void append_missing_wakeup_notes(uint64_t closed, uint64_t unmeasured, bool switch_ins, std::string& out);

}  // namespace perfprof::sched
