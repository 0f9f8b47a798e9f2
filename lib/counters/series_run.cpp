#include "counters/series_run.h"

#include <cstdio>

#include "core/time.h"
#include "perf-prof/read_values.h"

namespace perfprof::counters {

SeriesRun::SeriesRun(Context& ctx, const CounterGroup& group, std::string profiler, uint64_t slots,
                     uint64_t period_ns, bool perins)
    : ctx_(ctx), group_(group), profiler_(std::move(profiler)), slots_(slots), period_(period_ns), perins_(perins) {}

// The instances are known once the session runs: the series is made at the first read.
void SeriesRun::start() {
    const int n = std::max(ctx_.instances(), 0);
    std::vector<std::string> labels;
    std::vector<std::vector<bool>> present;
    for (int i = 0; i < n; ++i) {
        labels.push_back(instance_label(ctx_, i));
        present_.push_back(group_.present_on(ctx_.instance_cpu(i)));
        std::vector<bool> row(group_.names.size(), false);
        for (int e : present_.back()) row[size_t(e)] = true;
        present.push_back(std::move(row));
    }
    prev_.assign(size_t(n), std::vector<uint64_t>(group_.names.size() + 1, 0));
    first_.assign(size_t(n), true);
    deltas_.assign(group_.names.size(), 0);
    series_ = std::make_unique<Series>(group_.names, std::move(labels), std::move(present), slots_, period_, perins_);
}

uint64_t SeriesRun::on_read(int instance, const uint64_t* words, size_t n, bool& late) {
    late = false;
    if (!series_) start();
    if (instance < 0 || size_t(instance) >= prev_.size()) return 0;
    ReadValues rv(words, n, group_.read_format);
    if (!rv.ok()) return 0;
    values_.clear();
    for (size_t i = 0; i < rv.size(); ++i) values_.push_back(rv.value(i));
    bool first = first_[size_t(instance)];
    const uint64_t clock = group_deltas(values_, present_[size_t(instance)], prev_[size_t(instance)], deltas_, first);
    if (first_[size_t(instance)]) {
        first_[size_t(instance)] = false;
        return 0;
    }
    late = series_->add(instance, clock, deltas_);
    return clock;
}

void SeriesRun::flush(bool check_reset) {
    if (!series_) return;
    std::string wall = core::format_wall(core::realtime_now_ns());
    wall += ' ';
    out_.clear();
    const int printed = series_->print_ready(wall, out_);
    if (check_reset && printed && series_->needs_reset()) {
        out_ += wall + profiler_ + " reset\n";
        ctx_.enable_event(0, false);
        ctx_.enable_event(0, true);
        series_->clear();
        std::fill(first_.begin(), first_.end(), true);
    }
    if (!out_.empty()) {
        std::fwrite(out_.data(), 1, out_.size(), ctx_.out());
        std::fflush(ctx_.out());
    }
}

}  // namespace perfprof::counters
