#include "counters/series.h"

#include <algorithm>

#include "core/format.h"

namespace perfprof::counters {

uint64_t slots_per_round(uint64_t interval_ns, uint64_t period_ns) {
    if (!interval_ns || !period_ns) return 1;
    const uint64_t h = interval_ns > period_ns ? interval_ns / period_ns : period_ns / interval_ns;
    return std::max<uint64_t>(h, 1);
}

uint64_t group_deltas(const std::vector<uint64_t>& values, const std::vector<int>& present,
                      std::vector<uint64_t>& prev, std::vector<uint64_t>& deltas, bool& first) {
    const size_t leader = prev.size() - 1;
    std::fill(deltas.begin(), deltas.end(), 0);
    if (values.empty()) return 0;
    const uint64_t clock = values[0] - std::min(values[0], prev[leader]);
    prev[leader] = values[0];
    for (size_t k = 0; k < present.size() && k + 1 < values.size(); ++k) {
        const size_t e = size_t(present[k]);
        if (e >= leader || e >= deltas.size()) continue;
        const uint64_t v = values[k + 1];
        deltas[e] = v > prev[e] ? v - prev[e] : 0;
        prev[e] = v;
    }
    if (first) {  // the first read measures from enable: a baseline only
        first = false;
        std::fill(deltas.begin(), deltas.end(), 0);
        return 0;
    }
    return clock;
}

Series::Series(std::vector<std::string> names, std::vector<std::string> labels,
               std::vector<std::vector<bool>> present, uint64_t slots, uint64_t period_ns, bool perins)
    : names_(std::move(names)),
      labels_(std::move(labels)),
      present_(std::move(present)),
      h_(std::max<uint64_t>(slots, 1)),
      period_(period_ns),
      perins_(perins),
      pos_(labels_.size(), 0) {
    for (const std::string& n : names_) name_width_ = std::max(name_width_, n.size());
    const int events = int(names_.size());
    if (perins_) {
        for (int i = 0; i < int(labels_.size()); ++i)
            for (int e = 0; e < events; ++e)
                if (present_[size_t(i)][size_t(e)]) nodes_.push_back({i, e, std::vector<uint64_t>(2 * h_), 0});
    } else {
        for (int e = 0; e < events; ++e) nodes_.push_back({-1, e, std::vector<uint64_t>(2 * h_), 0});
    }
}

Series::Node* Series::node(int instance, int event) {
    for (Node& n : nodes_)
        if (n.event == event && (!perins_ || n.instance == instance)) return &n;
    return nullptr;
}

bool Series::add(int instance, uint64_t clock_delta, const std::vector<uint64_t>& deltas) {
    if (instance < 0 || size_t(instance) >= pos_.size()) return false;
    uint64_t& pos = pos_[size_t(instance)];
    const bool late = period_ && clock_delta >= 2 * period_;
    if (late) pos += clock_delta / period_ - 1;
    // A position more than a round ahead of the one printing would overwrite it.
    pos = std::min(pos, (round_ + 2) * h_ - 1);
    const size_t s = size_t(pos % (2 * h_));
    for (size_t e = 0; e < deltas.size() && e < names_.size(); ++e) {
        if (!present_[size_t(instance)][e]) continue;
        Node* n = node(instance, int(e));
        if (!n) continue;
        n->slot[s] += deltas[e];
        n->sum += deltas[e];
        max_value_ = std::max(max_value_, n->slot[s]);
    }
    ++pos;
    return late;
}

void Series::print_round(std::string& out) {
    const size_t base = size_t((round_ % 2) * h_);
    uint64_t digits = 1;
    for (uint64_t v = max_value_; v >= 10; v /= 10) ++digits;
    const size_t cw = std::max<size_t>(2, digits);
    for (Node& n : nodes_) {
        if (perins_) out += labels_[size_t(n.instance)];
        core::append_right(out, names_[size_t(n.event)], name_width_);
        out += ' ';
        for (uint64_t k = 0; k < h_; ++k) {
            if (k) out += '|';
            core::append_uint(out, n.slot[base + k], int(cw));
            n.slot[base + k] = 0;
        }
        out += " | total ";
        core::append_uint(out, n.sum);
        out += '\n';
        n.sum = 0;
    }
}

int Series::print_ready(const std::string& wall, std::string& out) {
    int printed = 0;
    if (pos_.empty()) return 0;
    for (;;) {
        const uint64_t slowest = *std::min_element(pos_.begin(), pos_.end());
        if (slowest < (round_ + 1) * h_) break;
        out += wall;
        out += '\n';
        print_round(out);
        ++round_;
        ++printed;
    }
    return printed;
}

bool Series::needs_reset() const {
    if (pos_.size() < 2 || h_ < 2) return false;
    const auto [lo, hi] = std::minmax_element(pos_.begin(), pos_.end());
    return *hi - *lo >= h_ / 2;
}

void Series::clear() {
    for (Node& n : nodes_) {
        std::fill(n.slot.begin(), n.slot.end(), 0);
        n.sum = 0;
    }
    std::fill(pos_.begin(), pos_.end(), 0);
    round_ = 0;
}

}  // namespace perfprof::counters
