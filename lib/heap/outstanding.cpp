#include "heap/outstanding.h"

#include <algorithm>

#include "stack/kv_stacks.h"

namespace perfprof::heap {

uint64_t Outstanding::bytes() const {
    // A red-black node: three pointers and a colour ahead of the value.
    constexpr uint64_t kNode = 4 * sizeof(void*);
    uint64_t total = 0;
    for (const auto& [ptr, a] : map_) total += kNode + sizeof(ptr) + sizeof(a) + a.sample.bytes();
    return total;
}

std::vector<const Outstanding::Entry*> Outstanding::by_time() const {
    std::vector<const Entry*> v;
    v.reserve(map_.size());
    for (const Entry& e : map_) v.push_back(&e);
    // The map is in pointer order, so a stable sort by time leaves equal times by pointer.
    std::stable_sort(v.begin(), v.end(), [](const Entry* a, const Entry* b) {
        return a->second.sample.time < b->second.sample.time;
    });
    return v;
}

namespace {

struct GroupValue {
    uint64_t bytes = 0;
    std::vector<CommTally> comms;
};

}  // namespace

std::vector<LeakGroup> group_by_stack(const std::vector<const Outstanding::Entry*>& entries, bool by_pid,
                                      bool comms) {
    // The key is the chain behind the process id (0 when chains resolve alike in every process),
    // so that one KvStacks entry is one group.
    stack::KvStacks<GroupValue> kv;
    std::vector<uint64_t> key;
    for (const Outstanding::Entry* e : entries) {
        const Allocation& a = e->second;
        if (a.sample.chain.empty()) continue;
        key.assign(1, by_pid ? a.sample.pid : 0);
        key.insert(key.end(), a.sample.chain.begin(), a.sample.chain.end());
        GroupValue& g = kv.insert(key);
        g.bytes += a.size;
        if (!comms || !a.comm) continue;
        auto it = std::find_if(g.comms.begin(), g.comms.end(),
                               [&](const CommTally& c) { return c.comm == *a.comm; });
        if (it == g.comms.end()) it = g.comms.insert(g.comms.end(), CommTally{*a.comm, 0, 0});
        it->bytes += a.size;
        it->objects++;
    }
    std::vector<LeakGroup> groups;
    groups.reserve(kv.size());
    kv.for_each([&](std::span<const uint64_t> k, const auto& entry) {
        LeakGroup g;
        g.pid = uint32_t(k[0]);
        g.chain.assign(k.begin() + 1, k.end());
        g.bytes = entry.value.bytes;
        g.objects = entry.n;
        g.comms = entry.value.comms;
        groups.push_back(std::move(g));
    });
    return groups;
}

}  // namespace perfprof::heap
