#include "heap/leak_pairing.h"

#include "heap/leak_report.h"

namespace perfprof::heap {

bool LeakPairing::accept(uint64_t time) {
    if (!lost_end_) return true;
    if (time >= lost_end_) {
        lost_start_ = lost_end_ = 0;
        return true;
    }
    return time <= lost_start_;
}

void LeakPairing::lost(uint64_t start, uint64_t end) {
    lost_start_ = start;
    lost_end_ = end > start ? end : 0;
}

std::vector<const Outstanding::Entry*> LeakPairing::to_report(
    int64_t now, uint64_t than_ns, const std::function<int64_t(uint64_t)>& realtime) const {
    std::vector<const Outstanding::Entry*> selected;
    for (const Outstanding::Entry* e : table_.by_time())
        if (!than_ns || now - realtime(e->second.sample.time) > int64_t(than_ns)) selected.push_back(e);
    return selected;
}

void LeakPairing::append_stats(bool list, std::string& out) const {
    const AllocList alloc_list{table_.size(), table_.bytes()};
    heap::append_stats(total_alloc_, total_free_, list ? &alloc_list : nullptr, out);
    out += '\n';
}

}  // namespace perfprof::heap
