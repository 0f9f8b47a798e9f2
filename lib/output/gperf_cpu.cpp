#include "output/gperf_cpu.h"

namespace perfprof::output {

GperfCpuProfile::GperfCpuProfile(uint64_t period_us) : words_{0, 3, 0, period_us, 0} {}

void GperfCpuProfile::add(std::span<const uint64_t> pcs, uint64_t count) {
    // A first pc of 0 would read as the trailer: such a stack is no stack.
    if (pcs.empty() || count == 0 || pcs.front() == 0) return;
    words_.push_back(count);
    words_.push_back(pcs.size());
    words_.insert(words_.end(), pcs.begin(), pcs.end());
}

std::string GperfCpuProfile::encode(std::string_view maps) const {
    constexpr uint64_t kTrailer[] = {0, 1, 0};
    std::string out;
    out.reserve((words_.size() + 3) * 8 + maps.size());
    out.append(reinterpret_cast<const char*>(words_.data()), words_.size() * 8);
    out.append(reinterpret_cast<const char*>(kTrailer), sizeof kTrailer);
    out.append(maps);
    return out;
}

}  // namespace perfprof::output
