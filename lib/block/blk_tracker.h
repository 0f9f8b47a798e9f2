// blktrace's request tracker and stage statistics (SPEC §P21): requests of one device followed
// from get-request through insert and issue to completion by their sector range, the delay
// of each stage and the labels of the unusual paths, and the table printed each interval.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace perfprof::block {

enum Stage : int { Getrq = 0, Insert = 1, Issue = 2, Complete = 3 };
inline constexpr int kStages = 4;
const char* stage_name(int stage);  // "block_getrq", ...

struct StageStats {
    uint64_t n = 0, sum = 0, min = 0, max = 0, above = 0;
    void add(uint64_t d, bool over);
};

class Tracker {
public:
    struct Result {
        const char* label = nullptr;  // EXIST, BYPASS_INSERT, LOST, GREATER_THAN, or none
        bool print = false;           // GREATER_THAN: print the event whatever -v
        bool tracked = false;         // an earlier stage of this request was known
        uint64_t delta = 0;
    };
    // `than`: threshold in the sample clock, 0 = none. Flushes (sector ~0) give an empty Result.
    Result on_event(int stage, uint64_t dev, uint64_t sector, uint32_t nr_sector, uint64_t t, uint64_t than);
    void clear() { reqs_.clear(); }  // after a loss
    size_t tracked() const { return reqs_.size(); }
    const StageStats& stats(int stage) const { return stats_[stage]; }
    // The table of §P21 (after the WALL line); resets the statistics. `unit` is "us" or "kcyc",
    // `than_col` adds the than(reqs) column, `bold` colours a non-zero count.
    std::string table(const char* unit, bool than_col, bool bold);

private:
    struct Req {
        uint64_t dev, sector, end;  // [sector, end)
        int stage;
        uint64_t t;
    };
    std::multimap<uint64_t, Req> reqs_;  // by start sector
    StageStats stats_[kStages];
};

}  // namespace perfprof::block
