// Call chains interned by (process, addresses): lock keeps waits and releases by a small id and
// symbolizes each distinct chain once, when it prints. Hot path: a hash of the addresses and one
// lookup; a chain not seen before is copied once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace perfprof::lock {

class StackIds {
public:
    static constexpr size_t kMaxStacks = size_t(1) << 16;  // past this, new chains get id 0

    // The id of `pid`'s chain (1, 2, ...); 0 for an empty chain or a full table. `fresh` says
    // the chain was not seen before.
    uint32_t intern(uint32_t pid, const uint64_t* ips, uint64_t nr, bool* fresh = nullptr);

    uint32_t pid(uint32_t id) const { return stacks_[id - 1].pid; }
    std::span<const uint64_t> ips(uint32_t id) const {
        const Stack& s = stacks_[id - 1];
        return {frames_.data() + s.first, s.nr};
    }
    // Text kept for a chain (its printed lines once symbolized), empty until set.
    std::string& text(uint32_t id) { return stacks_[id - 1].text; }
    size_t size() const { return stacks_.size(); }
    bool valid(uint32_t id) const { return id && id <= stacks_.size(); }

private:
    struct Stack {
        uint32_t pid;
        uint32_t nr;
        size_t first;
        std::string text;
    };
    bool same(const Stack& s, uint32_t pid, const uint64_t* ips, uint64_t nr) const;

    std::unordered_multimap<uint64_t, uint32_t> by_hash_;
    std::vector<Stack> stacks_;
    std::vector<uint64_t> frames_;
};

}  // namespace perfprof::lock
