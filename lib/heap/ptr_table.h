// A hash table from block address to a small value, for the agent's consumer (agent_heap):
// open addressing with linear probing and backward-shift deletion, so that a lookup, an insert
// and an erase each touch one or two cache lines and no node is allocated. The consumer applies
// millions of records a second; std::unordered_map's node per entry costs several times that.
// Key 0 marks an empty slot (no block lives at address 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perfprof::heap {

template <class V>
class PtrTable {
public:
    struct Slot {
        uint64_t key = 0;
        V value{};
    };

    explicit PtrTable(size_t capacity = 1024) { rehash(round_up(capacity)); }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    // The value of `key`, or null.
    V* find(uint64_t key) {
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.key == key) return &s.value;
            if (!s.key) return nullptr;
        }
    }

    const V* find(uint64_t key) const { return const_cast<PtrTable*>(this)->find(key); }

    // Inserts or replaces the value of `key` (not 0).
    V& put(uint64_t key, const V& v) {
        if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.key == key) return s.value = v;
            if (!s.key) {
                s.key = key;
                size_++;
                return s.value = v;
            }
        }
    }

    // Removes `key`; false if absent. When `out`, the removed value is copied there.
    bool erase(uint64_t key, V* out = nullptr) {
        size_t i = home(key);
        for (;; i = (i + 1) & mask_) {
            if (slots_[i].key == key) break;
            if (!slots_[i].key) return false;
        }
        if (out) *out = slots_[i].value;
        // Backward shift: later entries of the run move into the hole when their home allows,
        // so that no tombstone is left and lookups stay short.
        size_t hole = i;
        for (size_t j = (i + 1) & mask_; slots_[j].key; j = (j + 1) & mask_) {
            const size_t h = home(slots_[j].key);
            // j's entry may fill the hole when its home is not in (hole, j], cyclically.
            if (((j - h) & mask_) >= ((j - hole) & mask_)) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole] = Slot{};
        size_--;
        return true;
    }

    template <class F>
    void for_each(F&& fn) const {
        for (const Slot& s : slots_)
            if (s.key) fn(s.key, s.value);
    }

    void clear() {
        for (Slot& s : slots_) s = Slot{};
        size_ = 0;
    }

private:
    static size_t round_up(size_t n) {
        size_t c = 16;
        while (c < n * 2) c *= 2;
        return c;
    }

    // Fibonacci hashing: block addresses are 16-byte aligned and clustered, the multiply
    // spreads their middle bits over the top ones.
    size_t home(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }

    void rehash(size_t n) {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(n, Slot{});
        mask_ = n - 1;
        shift_ = 64;
        for (size_t c = n; c > 1; c >>= 1) shift_--;
        size_ = 0;
        for (const Slot& s : old)
            if (s.key) put(s.key, s.value);
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0, size_ = 0;
    unsigned shift_ = 64;
};

}  // namespace perfprof::heap
