#include "lock/stack_ids.h"

#include <cstring>

namespace perfprof::lock {

bool StackIds::same(const Stack& s, uint32_t pid, const uint64_t* ips, uint64_t nr) const {
    return s.pid == pid && s.nr == nr &&
           std::memcmp(frames_.data() + s.first, ips, nr * sizeof(uint64_t)) == 0;
}

uint32_t StackIds::intern(uint32_t pid, const uint64_t* ips, uint64_t nr, bool* fresh) {
    if (fresh) *fresh = false;
    if (!ips || !nr) return 0;
    uint64_t h = 0xcbf29ce484222325ull ^ pid;
    for (uint64_t i = 0; i < nr; i++) h = (h ^ ips[i]) * 0x100000001b3ull;
    auto [b, e] = by_hash_.equal_range(h);
    for (auto it = b; it != e; ++it)
        if (same(stacks_[it->second - 1], pid, ips, nr)) return it->second;
    if (stacks_.size() >= kMaxStacks) return 0;
    stacks_.push_back(Stack{pid, uint32_t(nr), frames_.size(), {}});
    frames_.insert(frames_.end(), ips, ips + nr);
    const auto id = uint32_t(stacks_.size());
    by_hash_.emplace(h, id);
    if (fresh) *fresh = true;
    return id;
}

}  // namespace perfprof::lock
