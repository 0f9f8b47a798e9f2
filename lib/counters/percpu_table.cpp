#include "counters/percpu_table.h"

#include "core/format.h"

namespace perfprof::counters {

PercpuTable::PercpuTable(std::vector<std::string> headers, std::vector<bool> halved, std::vector<std::string> labels)
    : headers_(std::move(headers)),
      labels_(std::move(labels)),
      halved_(std::move(halved)),
      cols_(headers_.size()),
      stored_(labels_.size() * cols_, 0),
      delta_(labels_.size() * cols_, 0) {
    halved_.resize(cols_, false);
}

void PercpuTable::update(size_t row, size_t col, uint64_t count) {
    if (row >= labels_.size() || col >= cols_) return;
    uint64_t& s = stored_[row * cols_ + col];
    uint64_t d = count > s ? count - s : 0;
    if (count > s) s = count;
    if (halved_[col]) d /= 2;
    delta_[row * cols_ + col] = d;
}

void PercpuTable::print(const std::string& wall, std::string& out) {
    out += wall;
    out += "\n[CPU] ";
    for (const std::string& h : headers_) {
        out += h;
        out += ' ';
    }
    out += '\n';
    std::vector<uint64_t> all(cols_, 0);
    for (size_t r = 0; r < labels_.size(); ++r) {
        out += labels_[r];
        out += ' ';
        for (size_t c = 0; c < cols_; ++c) {
            const uint64_t d = delta_[r * cols_ + c];
            all[c] += d;
            core::append_uint(out, d, int(headers_[c].size()));
            out += ' ';
        }
        out += '\n';
    }
    out += "[ALL] ";
    for (size_t c = 0; c < cols_; ++c) {
        core::append_uint(out, all[c], int(headers_[c].size()));
        out += ' ';
    }
    out += '\n';
}

}  // namespace perfprof::counters
