// Indexing .eh_frame / .debug_frame (DWARF 5 §6.4; the .eh_frame variant as in the LSB): the
// FDEs of each section, sorted, each compiled into rows at its first lookup (cfi_program.cpp);
// the entries are read by cfi_entries.cpp.
#include "unwind/cfi_table.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "unwind/cfi_entries.h"
#include "unwind/cfi_program.h"

namespace perfprof::unwind {

using cfi::Entry;
using cfi::parse_cie;
using cfi::ParsedCie;
using cfi::read_entry;
using cfi::Reader;

CfiTable CfiTable::build(std::span<const FrameSection> sections) {
    CfiTable t;
    std::vector<std::pair<uint64_t, uint64_t>> covered;  // ranges of earlier sections
    auto overlaps = [&](uint64_t b, uint64_t e) {
        auto it = std::upper_bound(covered.begin(), covered.end(), std::make_pair(b, UINT64_MAX));
        if (it != covered.begin() && std::prev(it)->second > b) return true;
        return it != covered.end() && it->first < e;
    };
    for (const FrameSection& fs : sections) {
        // Offsets are kept in 32 bits: a section of 4 GiB is not call-frame information.
        if (!fs.data || fs.size == 0 || fs.size > UINT32_MAX) continue;
        const uint32_t index = uint32_t(t.sections_.size());
        t.sections_.push_back(
            {fs.kind, fs.addr, std::string(reinterpret_cast<const char*>(fs.data), fs.size)});
        const std::string_view bytes = t.sections_.back().bytes;
        std::unordered_map<size_t, int64_t> cie_at;  // section offset → index in cies_, -1 unusable
        const size_t first = t.fdes_.size();
        size_t off = 0;
        while (off + 4 <= bytes.size()) {
            Entry e;
            if (!read_entry(bytes, fs.kind, off, e)) {
                // A zero length ends .eh_frame; anything else is corrupt: the rest is skipped.
                uint32_t len;
                std::memcpy(&len, bytes.data() + off, 4);
                if (len != 0) t.skipped_++;
                break;
            }
            off = e.end;
            if (e.is_cie) continue;
            const size_t cie_off = fs.kind == FrameSection::EhFrame
                                       ? (e.id <= e.id_pos ? e.id_pos - size_t(e.id) : SIZE_MAX)
                                       : size_t(std::min<uint64_t>(e.id, SIZE_MAX));
            auto [it, fresh] = cie_at.try_emplace(cie_off, -1);
            if (fresh && cie_off < bytes.size()) {
                Entry ce;
                if (read_entry(bytes, fs.kind, cie_off, ce) && ce.is_cie) {
                    const ParsedCie c = parse_cie(bytes, fs.addr, fs.kind, ce);
                    if (c.valid) {
                        it->second = int64_t(t.cies_.size());
                        t.cies_.push_back({c.code_align, c.data_align, index, uint32_t(c.insns),
                                           uint32_t(c.insns_end), uint8_t(c.ra), c.fde_enc, c.signal,
                                           c.augmented});
                    }
                }
            }
            if (it->second < 0) {
                t.skipped_++;
                continue;
            }
            const Cie& cie = t.cies_[size_t(it->second)];
            Reader r(bytes, fs.addr, e.id_pos + e.id_size, e.end);
            const uint64_t begin = r.pointer(cie.fde_enc);
            const uint64_t len = r.pointer(cie.fde_enc, false);
            if (cie.augmented) r.skip(r.uleb());
            if (!r.ok() || r.pos() > e.end) {
                t.skipped_++;
                continue;
            }
            // Address 0 or an empty range: an FDE of code the linker dropped.
            if (begin == 0 || len == 0 || begin + len < begin) continue;
            if (overlaps(begin, begin + len)) continue;
            t.fdes_.push_back({begin, begin + len, uint32_t(it->second), uint32_t(r.pos()), uint32_t(e.end)});
        }
        for (size_t k = first; k < t.fdes_.size(); k++)
            covered.emplace_back(t.fdes_[k].begin, t.fdes_[k].end);
        std::sort(covered.begin(), covered.end());
    }
    std::sort(t.fdes_.begin(), t.fdes_.end(), [](const Fde& a, const Fde& b) { return a.begin < b.begin; });
    // Overlapping FDEs of one section (should not happen): the first wins.
    size_t out = 0;
    for (size_t i = 0; i < t.fdes_.size(); i++) {
        if (out && t.fdes_[i].begin < t.fdes_[out - 1].end) {
            t.skipped_++;
            continue;
        }
        t.fdes_[out++] = t.fdes_[i];
    }
    t.fdes_.resize(out);
    t.fdes_.shrink_to_fit();
    return t;
}

bool CfiTable::compile(Fde& f) {
    f.first_row = uint32_t(rows_.size());
    if (!CfiProgram(*this, f).run()) {
        f.state = Fde::Bad;
        skipped_++;
        return false;
    }
    f.nrows = uint32_t(rows_.size() - f.first_row);
    f.state = Fde::Compiled;
    compiled_++;
    return true;
}

const Row* CfiTable::find(uint64_t pc) {
    auto it = std::upper_bound(fdes_.begin(), fdes_.end(), pc,
                               [](uint64_t p, const Fde& f) { return p < f.begin; });
    if (it == fdes_.begin()) return nullptr;
    Fde& f = *std::prev(it);
    if (pc >= f.end || f.state == Fde::Bad) return nullptr;
    if (f.state == Fde::Pending && !compile(f)) return nullptr;
    const Row* first = rows_.data() + f.first_row;
    const Row* last = first + f.nrows;
    const Row* r = std::upper_bound(first, last, pc, [](uint64_t p, const Row& row) { return p < row.pc; });
    if (r == first) return nullptr;
    --r;
    return r->cfa_kind == CfaKind::None ? nullptr : r;
}

std::span<const uint8_t> CfiTable::expression(int32_t index) const {
    if (index < 0 || size_t(index) >= expr_index_.size()) return {};
    auto [off, len] = expr_index_[size_t(index)];
    return {exprs_.data() + off, len};
}

std::vector<CfiTable::Range> CfiTable::ranges() const {
    std::vector<Range> out;
    out.reserve(fdes_.size());
    for (const Fde& f : fdes_) out.push_back({f.begin, f.end});
    return out;
}

size_t CfiTable::memory_bytes() const {
    size_t n = sizeof(*this) + fdes_.capacity() * sizeof(Fde) + cies_.capacity() * sizeof(Cie) +
               rows_.capacity() * sizeof(Row) + rules_.capacity() * sizeof(RegRule) + exprs_.capacity() +
               expr_index_.capacity() * sizeof(expr_index_[0]);
    for (const Section& s : sections_) n += s.bytes.capacity();
    return n + (rule_sets_.size() + expr_ids_.size()) * 64;
}

}  // namespace perfprof::unwind
