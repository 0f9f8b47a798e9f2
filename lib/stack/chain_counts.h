// Sampled call chains counted by their raw addresses, under their process and a root name (the
// process's comm), until an output symbolizes them: when it is written, when too many are
// pending, or before the process's symbols are dropped (sym::ProcessObserver). Counting this way
// costs no symbol lookup per sample; each distinct chain is symbolized once. Shared by the
// folded/SVG flame graph and the pprof output.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace perfprof::stack {

class Printer;

class ChainCounts {
public:
    // Counts one chain of process `pid` under `root` ("" = none), `n` times (a weight: lock's
    // microseconds of wait). The first pending chain of a
    // process has `p` read its maps now, while it lives. True when so many chains are pending
    // that the caller should symbolize them now. Hot path: no allocation but the map entry of
    // a chain not seen before.
    bool add(Printer& p, const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root, uint64_t n = 1);
    bool holds(uint32_t pid) const { return pids_.count(pid) != 0; }
    bool empty() const { return counts_.empty(); }

    // Calls fn(pid, root, chain, count) for every pending chain, then forgets them all.
    template <class F>
    void drain(F&& fn) {
        for (const auto& [key, n] : counts_) {
            uint32_t pid, root_len;
            std::memcpy(&pid, key.data(), 4);
            std::memcpy(&root_len, key.data() + 4, 4);
            const std::string_view root(key.data() + 8, root_len);
            ips_.resize((key.size() - 8 - root_len) / sizeof(uint64_t));
            std::memcpy(ips_.data(), key.data() + 8 + root_len, ips_.size() * sizeof(uint64_t));
            fn(pid, root, std::span<const uint64_t>(ips_), n);
        }
        counts_.clear();
        pids_.clear();
    }

private:
    // Bounds the chains kept between symbolizations (each ~100 bytes and a map node).
    static constexpr size_t kMaxPending = size_t(1) << 16;

    std::unordered_map<std::string, uint64_t> counts_;  // pid, root length, root, addresses → count
    std::unordered_set<uint32_t> pids_;
    std::string key_;
    std::vector<uint64_t> ips_;
};

}  // namespace perfprof::stack
