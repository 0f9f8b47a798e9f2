#include "stack/chain_counts.h"

#include "stack/stack_printer.h"

namespace perfprof::stack {

bool ChainCounts::add(Printer& p, const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root,
                      uint64_t n, uint64_t value) {
    const auto root_len = static_cast<uint32_t>(root.size());
    key_.resize(8 + root.size() + nr * sizeof(uint64_t));
    char* k = key_.data();
    std::memcpy(k, &pid, 4);
    std::memcpy(k + 4, &root_len, 4);
    // No root, or no frame, is a null pointer with a size of 0: not for memcpy.
    if (!root.empty()) std::memcpy(k + 8, root.data(), root.size());
    if (nr) std::memcpy(k + 8 + root.size(), ips, nr * sizeof(uint64_t));
    auto [it, fresh] = counts_.try_emplace(key_);
    it->second.n += n;
    it->second.value += value;
    if (!fresh) return false;
    if (pids_.insert(pid).second) p.prepare(pid);
    return counts_.size() >= kMaxPending;
}

}  // namespace perfprof::stack
