// percpu-stat's delta table (SPEC-PROFILERS §P18): per CPU and column the last count read,
// the delta since, the [ALL] sums, and the printer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfprof::counters {

class PercpuTable {
public:
    // `headers`: the column headers, exact (incl. a leading blank); `halved[c]`: the column's
    // deltas are halved (idle: enter and exit both count); `labels`: "[000]" per CPU row.
    PercpuTable(std::vector<std::string> headers, std::vector<bool> halved, std::vector<std::string> labels);

    // A new count of column `col` on row `row`: the delta is count − stored when larger, else 0.
    void update(size_t row, size_t col, uint64_t count);
    uint64_t delta(size_t row, size_t col) const { return delta_[row * cols_ + col]; }
    // The table of the last deltas: a "[CPU] " header, one row per CPU, the [ALL] row.
    void print(const std::string& wall, std::string& out);

private:
    std::vector<std::string> headers_, labels_;
    std::vector<bool> halved_;
    size_t cols_;
    std::vector<uint64_t> stored_, delta_;
};

}  // namespace perfprof::counters
