#include "block/blk_tracker.h"

#include <algorithm>
#include <cstdio>

namespace perfprof::block {

const char* stage_name(int stage) {
    static const char* const names[kStages] = {"block_getrq", "block_rq_insert", "block_rq_issue",
                                               "block_rq_complete"};
    return stage >= 0 && stage < kStages ? names[stage] : "?";
}

void StageStats::add(uint64_t d, bool over) {
    if (n == 0 || d < min) min = d;
    max = std::max(max, d);
    n++;
    sum += d;
    if (over) above++;
}

Tracker::Result Tracker::on_event(int stage, uint64_t dev, uint64_t sector, uint32_t nr_sector, uint64_t t,
                                  uint64_t than) {
    Result r;
    if (sector == ~uint64_t(0)) return r;
    const uint64_t end = sector + std::max<uint32_t>(nr_sector, 1);
    // Overlap: a tracked [s, e) with s < end and e > sector, on the same device. Ranges are
    // short: look back from the first start at or past `end`.
    auto it = reqs_.lower_bound(end);
    auto found = reqs_.end();
    while (it != reqs_.begin()) {
        --it;
        if (it->second.dev == dev && it->second.end > sector) {
            found = it;
            break;
        }
        if (sector >= it->first + (uint64_t(1) << 20)) break;  // far below: no request that long
    }
    if (found != reqs_.end()) {
        Req& q = found->second;
        r.tracked = true;
        if (stage == Getrq)
            r.label = "EXIST";
        else if (stage == Issue && q.stage != Insert)
            r.label = "BYPASS_INSERT";
        else if (q.stage != stage - 1)
            r.label = "LOST";
        r.delta = t >= q.t ? t - q.t : 0;
        const bool over = than && r.delta > than;
        stats_[stage].add(r.delta, over);
        if (over) {
            r.label = "GREATER_THAN";
            r.print = true;
        }
        reqs_.erase(found);
        if (stage != Complete) reqs_.emplace(sector, Req{dev, sector, end, stage, t});
        return r;
    }
    if (stage != Complete) reqs_.emplace(sector, Req{dev, sector, end, stage, t});
    return r;
}

std::string Tracker::table(const char* unit, bool than_col, bool bold) {
    constexpr int W = 17;
    std::string out;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%*s => %-*s     reqs        total(%s)      min(%s)      avg(%s)      max(%s)%s\n", W,
                  "start", W, "end", unit, unit, unit, unit, than_col ? "    than(reqs)" : "");
    out += buf;
    out += std::string(W, '-') + "    " + std::string(W, '-') +
           " -------- ---------------- ------------ ------------ ------------";
    out += than_col ? "  -------------\n" : "\n";
    for (int s = Insert; s < kStages; s++) {
        const StageStats& st = stats_[s];
        const double sum = double(st.sum) / 1000.0, mn = st.n ? double(st.min) / 1000.0 : 0.0,
                     avg = st.n ? double(st.sum) / 1000.0 / double(st.n) : 0.0, mx = double(st.max) / 1000.0;
        std::snprintf(buf, sizeof buf, "%*s => %-*s %8lu %16.3f %12.3f %12.3f %12.3f", W, stage_name(s - 1),
                      W, stage_name(s), (unsigned long)st.n, sum, mn, avg, mx);
        out += buf;
        if (than_col) {
            const unsigned pct = st.n ? unsigned(st.above * 100 / st.n) : 0;
            const bool red = bold && st.above > 0;
            std::snprintf(buf, sizeof buf, " %s%6lu (%3u%%)%s", red ? "\033[1;31m" : "",
                          (unsigned long)st.above, pct, red ? "\033[0m" : "");
            out += buf;
        }
        out += '\n';
    }
    for (StageStats& st : stats_) st = {};
    return out;
}

}  // namespace perfprof::block
