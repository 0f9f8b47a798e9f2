// Key–value stacks (SPEC §5.7): one entry per distinct raw call chain, holding a profiler
// record V (zero-initialised) and an occurrence count. The shared aggregation of kmemleak,
// kmemprof, top and the flame graph.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

namespace perfprof::stack {

template <class V>
class KvStacks {
public:
    struct Entry {
        V value{};
        uint64_t n = 0;  // insertions
    };
    // Key order: the raw u64 entries compared lexicographically, then by length.
    using Map = std::map<std::vector<uint64_t>, Entry>;

    // The entry of `chain` (created zeroed), its count incremented.
    V& insert(std::span<const uint64_t> chain) {
        Entry& e = map_[std::vector<uint64_t>(chain.begin(), chain.end())];
        e.n++;
        return e.value;
    }
    size_t size() const { return map_.size(); }
    void clear() { map_.clear(); }

    // In key order.
    template <class F>
    void for_each(F&& fn) const {
        for (const auto& [k, e] : map_) fn(std::span<const uint64_t>(k), e);
    }

    // Sorted by `before(a, b)` on the entries (default: by n descending), at most `limit`.
    template <class F>
    void for_each_sorted(F&& fn, size_t limit = SIZE_MAX,
                         std::function<bool(const Entry&, const Entry&)> before = {}) const {
        std::vector<const typename Map::value_type*> v;
        v.reserve(map_.size());
        for (const auto& kv : map_) v.push_back(&kv);
        auto cmp = [&](auto* a, auto* b) {
            return before ? before(a->second, b->second) : a->second.n > b->second.n;
        };
        std::stable_sort(v.begin(), v.end(), cmp);
        for (size_t i = 0; i < v.size() && i < limit; i++)
            fn(std::span<const uint64_t>(v[i]->first), v[i]->second);
    }

private:
    Map map_;
};

}  // namespace perfprof::stack
