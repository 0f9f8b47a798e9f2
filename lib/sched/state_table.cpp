#include "sched/state_table.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace perfprof::sched {

void StateTable::add(uint32_t tid, int row, uint64_t ns, uint64_t threshold) {
    Rows& rows = per_thread_ ? threads_[tid] : rows_;
    rows[size_t(row)].add(ns, threshold);
    any_ = true;
}

void StateTable::render_rows(const Rows& rows, std::string_view prefix, std::string& out) {
    char buf[160];
    for (int r = 0; r < kRows; r++) {
        const output::LatencyDist& d = rows[size_t(r)];
        if (!d.calls) continue;
        std::snprintf(buf, sizeof buf, "%s %8llu %16.3f %12.3f %12.3f %12.3f %12.3f %12.3f\n", kRowName[r],
                      (unsigned long long)d.calls, double(d.total) / 1000.0, double(d.min) / 1000.0,
                      d.sketch.quantile(0.50) / 1000.0, d.sketch.quantile(0.95) / 1000.0,
                      d.sketch.quantile(0.99) / 1000.0, double(d.max) / 1000.0);
        out += prefix;
        out += buf;
    }
}

void StateTable::render(std::string_view wall, const char* unit,
                        const std::function<std::string_view(uint32_t)>& comm, std::string& out) {
    if (!any_) return;
    any_ = false;
    out += wall;
    out += " \n";
    const std::string u(unit);
    char cols[200];
    std::snprintf(cols, sizeof cols, "St %8s %16s %12s %12s %12s %12s %12s\n", "calls",
                  ("total(" + u + ")").c_str(), ("min(" + u + ")").c_str(), ("p50(" + u + ")").c_str(),
                  ("p95(" + u + ")").c_str(), ("p99(" + u + ")").c_str(), ("max(" + u + ")").c_str());
    const char* dashes =
        "-- -------- ---------------- ------------ ------------ ------------ ------------ "
        "------------\n";
    if (!per_thread_) {
        out += cols;
        out += dashes;
        render_rows(rows_, "", out);
        for (auto& r : rows_) r.clear();
        return;
    }
    char head[64];
    std::snprintf(head, sizeof head, "thread %-16s ", "comm");
    out += head;
    out += cols;
    out += "------ ---------------- ";
    out += dashes;
    std::vector<uint32_t> tids;
    for (const auto& [tid, rows] : threads_) tids.push_back(tid);
    std::sort(tids.begin(), tids.end());
    char prefix[64];
    for (uint32_t tid : tids) {
        const std::string name(comm(tid).substr(0, 16));
        std::snprintf(prefix, sizeof prefix, "%6u %-16s ", tid, name.c_str());
        render_rows(threads_[tid], prefix, out);
    }
    threads_.clear();
}

void append_missing_wakeup_notes(uint64_t closed, uint64_t unmeasured, bool switch_ins, std::string& out) {
    char buf[256];
    if (closed) {
        std::snprintf(buf, sizeof buf,
                      "task-state: %llu sleep%s ended without a wake-up record (not reported by "
                      "the kernel); counted to the switch-in, run-queue wait included\n",
                      (unsigned long long)closed, closed == 1 ? "" : "s");
        out += buf;
    }
    if (unmeasured) {
        std::snprintf(buf, sizeof buf,
                      "task-state: %llu sleep%s ended without a wake-up record (not reported by "
                      "the kernel)%s; not counted\n",
                      (unsigned long long)unmeasured, unmeasured == 1 ? "" : "s",
                      switch_ins ? " nor a switch-in" : "");
        out += buf;
    }
}

}  // namespace perfprof::sched
