// oncpu's run accounting (SPEC §P3): per CPU, which tasks ran and for how long (from
// sched_switch), or per attached thread, on which CPUs (from sched_stat_runtime), and the
// tables printed each interval. Pure: the profiler reads the fields and hands values in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::sched {

// CPU mode: per CPU, the task switched in last and when.
class CpuRuns {
public:
    // prio_ok: prev_prio is in --prio's list (true without --prio).
    void on_switch(uint32_t cpu, uint64_t t, int prev_pid, int next_pid, std::string_view prev_comm,
                   bool prio_ok, bool only_comm);
    void lost(uint32_t cpu);  // the run in progress on `cpu` is unknown: start over there
    bool empty() const { return rows_.empty(); }
    // The table of §P3 (after the WALL line the caller prints); clears the rows.
    std::string table(bool detail, bool only_comm);

private:
    struct Cpu {
        uint64_t start = 0;
        int pid = 0;
    };
    struct Row {
        std::string name;
        int tid = 0;
        uint64_t ns = 0, runs = 0, max = 0;
    };
    std::vector<Cpu> cpus_;
    // (cpu, tid) or (cpu, name) with --only-comm
    std::map<std::pair<uint32_t, int>, Row> rows_;
    std::map<std::pair<uint32_t, std::string>, Row> named_;
};

// Thread mode: per attached thread, the runtime per CPU.
class ThreadRuns {
public:
    void add(int tid, uint32_t cpu, std::string_view comm, uint64_t runtime_ns);
    bool empty() const { return rows_.empty(); }
    // Threads in `order` (attach order), then any other; clears the rows.
    std::string table(const std::vector<int>& order);

private:
    struct Row {
        std::string comm;
        std::map<uint32_t, uint64_t> cpus;
    };
    std::map<int, Row> rows_;
};

}  // namespace perfprof::sched
