#include "sched/oncpu.h"

#include <algorithm>
#include <cstdio>

namespace perfprof::sched {

void CpuRuns::on_switch(uint32_t cpu, uint64_t t, int prev_pid, int next_pid, std::string_view prev_comm,
                        bool prio_ok, bool only_comm) {
    if (cpu >= cpus_.size()) cpus_.resize(cpu + 1);
    Cpu& c = cpus_[cpu];
    if (c.start == 0 || c.pid != prev_pid || t < c.start) {
        c.start = t;
        c.pid = next_pid;
        return;
    }
    const uint64_t run = t - c.start;
    c.start = t;
    c.pid = next_pid;
    if (prev_pid == 0 || !prio_ok) return;
    Row* r;
    if (only_comm) {
        r = &named_[{cpu, std::string(prev_comm)}];
    } else {
        r = &rows_[{cpu, prev_pid}];
        r->tid = prev_pid;
    }
    if (r->runs == 0) r->name = prev_comm;
    r->ns += run;
    r->runs++;
    r->max = std::max(r->max, run);
}

void CpuRuns::lost(uint32_t cpu) {
    if (cpu < cpus_.size()) cpus_[cpu].start = 0;
}

std::string CpuRuns::table(bool detail, bool only_comm) {
    std::map<uint32_t, std::vector<const Row*>> by_cpu;
    for (auto& [k, r] : rows_) by_cpu[k.first].push_back(&r);
    for (auto& [k, r] : named_) by_cpu[k.first].push_back(&r);
    std::string out;
    if (by_cpu.empty()) return out;
    const char* cells = only_comm ? (detail ? "COMM(ms/sws/max_ms)" : "COMM(ms)")
                                  : (detail ? "COMM:TID(ms/sws/max_ms)" : "COMM:TID(ms)");
    out += detail ? "CPU SUM(ms/sws) " : "CPU SUM(ms) ";
    out += cells;
    out += '\n';
    char buf[256];
    for (auto& [cpu, rows] : by_cpu) {
        std::sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) {
            return a->ns != b->ns ? a->ns > b->ns : a->tid != b->tid ? a->tid < b->tid : a->name < b->name;
        });
        uint64_t sum = 0, runs = 0;
        for (const Row* r : rows) sum += r->ns, runs += r->runs;
        if (detail) {
            char cell[64];
            std::snprintf(cell, sizeof cell, "%lums/%lu", (unsigned long)(sum / 1000000),
                          (unsigned long)runs);
            std::snprintf(buf, sizeof buf, "%03u %-11s ", cpu, cell);
        } else {
            std::snprintf(buf, sizeof buf, "%03u %-7lu ", cpu, (unsigned long)(sum / 1000000));
        }
        out += buf;
        for (const Row* r : rows) {
            out += r->name;
            if (!only_comm) out += ":" + std::to_string(r->tid);
            if (detail)
                std::snprintf(buf, sizeof buf, "(%.1fms/%lu/%.1fms) ", double(r->ns) / 1e6,
                              (unsigned long)r->runs, double(r->max) / 1e6);
            else
                std::snprintf(buf, sizeof buf, "(%.1fms) ", double(r->ns) / 1e6);
            out += buf;
        }
        out += '\n';
    }
    rows_.clear();
    named_.clear();
    return out;
}

void ThreadRuns::add(int tid, uint32_t cpu, std::string_view comm, uint64_t runtime_ns) {
    Row& r = rows_[tid];
    if (!comm.empty()) r.comm = comm;  // the latest name (a command execs after attach)
    r.cpus[cpu] += runtime_ns;
}

std::string ThreadRuns::table(const std::vector<int>& order) {
    std::string out;
    if (rows_.empty()) return out;
    out += "THREAD COMM             SUM(ms) CPUS(ms) \n";
    std::vector<int> tids;
    for (int t : order)
        if (rows_.count(t)) tids.push_back(t);
    for (auto& [t, r] : rows_)
        if (std::find(order.begin(), order.end(), t) == order.end()) tids.push_back(t);
    char buf[128];
    for (int t : tids) {
        const Row& r = rows_[t];
        uint64_t sum = 0;
        for (auto& [c, ns] : r.cpus) sum += ns;
        std::snprintf(buf, sizeof buf, "%-6d ", t);
        out += buf;
        out += r.comm;
        if (r.comm.size() < 16) out.append(16 - r.comm.size(), ' ');
        std::snprintf(buf, sizeof buf, " %-7lu ", (unsigned long)(sum / 1000000));
        out += buf;
        for (auto& [c, ns] : r.cpus) {
            std::snprintf(buf, sizeof buf, "%u(%lums) ", c, (unsigned long)(ns / 1000000));
            out += buf;
        }
        out += '\n';
    }
    rows_.clear();
    return out;
}

}  // namespace perfprof::sched
