// ReadValues: a view over what read() of a perf event fd returns, or a sample's
// PERF_SAMPLE_READ words, laid out by the event's read_format (perf_event_open(2)):
//   not GROUP: value, [time_enabled], [time_running], [id], [lost]
//   GROUP:     nr, [time_enabled], [time_running], then nr × (value, [id], [lost])
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

namespace perfprof {

class ReadValues {
public:
    ReadValues(const uint64_t* words, size_t n, uint64_t read_format) : w_(words), fmt_(read_format) {
        if (!words) return;
        const bool group = read_format & PERF_FORMAT_GROUP;
        size_t head = (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED ? 1 : 0) +
                      (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING ? 1 : 0);
        stride_ = 1 + (read_format & PERF_FORMAT_ID ? 1 : 0) + (read_format & PERF_FORMAT_LOST ? 1 : 0);
        if (group) {
            if (n < 1 + head) return;
            nr_ = words[0];
            times_ = 1;
            first_ = 1 + head;
            if (nr_ > (n - first_) / stride_) return;  // truncated: not ok()
        } else {
            if (n < stride_ + head) return;
            nr_ = 1;
            times_ = 1;
            first_ = 0;
            single_ = true;
        }
        ok_ = true;
    }

    bool ok() const { return ok_; }
    size_t size() const { return ok_ ? size_t(nr_) : 0; }
    uint64_t value(size_t i) const { return w_[at(i)]; }
    // 0 when the read_format has no PERF_FORMAT_ID.
    uint64_t id(size_t i) const { return fmt_ & PERF_FORMAT_ID ? w_[at(i) + id_off()] : 0; }
    uint64_t time_enabled() const {
        return fmt_ & PERF_FORMAT_TOTAL_TIME_ENABLED ? w_[times_] : 0;
    }
    uint64_t time_running() const {
        if (!(fmt_ & PERF_FORMAT_TOTAL_TIME_RUNNING)) return 0;
        return w_[times_ + (fmt_ & PERF_FORMAT_TOTAL_TIME_ENABLED ? 1 : 0)];
    }

private:
    // Not GROUP: the value comes first, the times after it, then id and lost.
    size_t at(size_t i) const { return single_ ? 0 : first_ + i * stride_; }
    size_t id_off() const {
        if (!single_) return 1;
        return 1 + (fmt_ & PERF_FORMAT_TOTAL_TIME_ENABLED ? 1 : 0) + (fmt_ & PERF_FORMAT_TOTAL_TIME_RUNNING ? 1 : 0);
    }

    const uint64_t* w_ = nullptr;
    uint64_t fmt_ = 0;
    uint64_t nr_ = 0;
    size_t times_ = 0;  // where the times begin: after the value, or after nr
    size_t first_ = 0, stride_ = 1;
    bool single_ = false, ok_ = false;
};

}  // namespace perfprof
