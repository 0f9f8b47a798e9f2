#include "unwind/cfi_table.h"

#include <algorithm>

namespace perfprof::unwind {

CfiTable CfiTable::build(std::span<const FrameSection>) {
    return {};
}

const Row* CfiTable::find(uint64_t pc) const {
    auto it =
        std::upper_bound(rows_.begin(), rows_.end(), pc, [](uint64_t p, const Row& r) { return p < r.pc; });
    if (it == rows_.begin()) return nullptr;
    --it;
    return it->cfa_kind == CfaKind::None ? nullptr : &*it;
}

std::span<const uint8_t> CfiTable::expression(int32_t index) const {
    if (index < 0 || size_t(index) >= expr_index_.size()) return {};
    auto [off, len] = expr_index_[size_t(index)];
    return {exprs_.data() + off, len};
}

size_t CfiTable::memory_bytes() const {
    return sizeof(*this) + rows_.capacity() * sizeof(Row) + rules_.capacity() * sizeof(RegRule) +
           exprs_.capacity() + expr_index_.capacity() * sizeof(expr_index_[0]);
}

}  // namespace perfprof::unwind
