#include "stack/chain_counts.h"

#include "stack/stack_printer.h"

namespace perfprof::stack {

bool ChainCounts::add(Printer& p, const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root, uint64_t n) {
    const auto root_len = static_cast<uint32_t>(root.size());
    key_.resize(8 + root.size() + nr * sizeof(uint64_t));
    char* k = key_.data();
    std::memcpy(k, &pid, 4);
    std::memcpy(k + 4, &root_len, 4);
    std::memcpy(k + 8, root.data(), root.size());
    std::memcpy(k + 8 + root.size(), ips, nr * sizeof(uint64_t));
    auto [it, fresh] = counts_.try_emplace(key_, 0);
    it->second += n;
    if (!fresh) return false;
    if (pids_.insert(pid).second) p.prepare(pid);
    return counts_.size() >= kMaxPending;
}

}  // namespace perfprof::stack
