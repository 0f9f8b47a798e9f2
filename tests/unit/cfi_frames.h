// Shared by the unit tests of lib/unwind/cfi_table and cfi_program: a row of a CfiTable
// described in words, the table's rows as runs, and .eh_frame / .debug_frame sections written by
// hand entry by entry.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "unwind/cfi_table.h"

namespace perfprof::unwind {

// ---------------------------------------------------------------- one row of ours, described

// Its formats are the literals below, each with one long long conversion.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
inline std::string fmt(const char* f, long long v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}
#pragma GCC diagnostic pop

// Our table at `pc`: "cfa=r7+16 ra=offset-8 rbp=same rbx=same", "+ S" for a signal frame,
// or "none". Expressions by their first operation.
inline std::string ours_at(CfiTable& t, uint64_t pc) {
    const Row* r = t.find(pc);
    if (!r) return "none";
    std::string s = "cfa=";
    if (r->cfa_kind == CfaKind::RegOffset) {
        s += fmt("r%lld", r->cfa_reg) + fmt("%+lld", r->cfa_offset);
    } else if (r->cfa_kind == CfaKind::Expression) {
        auto e = t.expression(r->cfa_offset);
        s += e.empty() ? "expr:empty" : fmt("expr:%02llx", e[0]);
    } else {
        s += "?";
    }
    for (auto [reg, name] : {std::pair{kRa, " ra="}, {kRbp, " rbp="}, {kRbx, " rbx="}}) {
        s += name;
        const RegRule* rule = nullptr;
        for (const RegRule& x : t.rules(*r))
            if (x.reg == reg) rule = &x;
        if (!rule) {
            s += "same";
            continue;
        }
        switch (rule->kind) {
            case RuleKind::Undefined:
                s += "undef";
                break;
            case RuleKind::SameValue:
                s += "same";
                break;
            case RuleKind::Offset:
                s += fmt("offset%+lld", rule->value);
                break;
            case RuleKind::ValOffset:
                s += fmt("val_offset%+lld", rule->value);
                break;
            case RuleKind::Register:
                s += fmt("reg%lld", rule->value);
                break;
            case RuleKind::Expression:
            case RuleKind::ValExpression: {
                auto e = t.expression(rule->value);
                s += rule->kind == RuleKind::Expression ? "expr:" : "val_expr:";
                s += e.empty() ? "empty" : fmt("%02llx", e[0]);
                break;
            }
        }
    }
    if (r->flags & kSignalFrame) s += " S";
    return s;
}

// Our rows (and gaps without a CFA inside an FDE), as [start, end) runs: the row find() returns
// changes only at a row's start, so each end is a binary search away (compiles the FDEs). Every
// `stride`-th FDE.
inline std::vector<std::pair<uint64_t, uint64_t>> our_rows(CfiTable& t, size_t stride = 1) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    const std::vector<CfiTable::Range> fdes = t.ranges();
    for (size_t i = 0; i < fdes.size(); i += stride) {
        const CfiTable::Range& fde = fdes[i];
        for (uint64_t pc = fde.begin; pc < fde.end;) {
            const Row* r = t.find(pc);
            const bool none = r == nullptr;
            const uint64_t start = none ? 0 : r->pc;
            uint64_t lo = pc + 1, hi = fde.end;  // the first pc of another row, or the end
            while (lo < hi) {
                const uint64_t mid = lo + (hi - lo) / 2;
                const Row* m = t.find(mid);
                if (none ? m != nullptr : (!m || m->pc != start))
                    hi = mid;
                else
                    lo = mid + 1;
            }
            out.push_back({pc, lo});
            pc = lo;
        }
    }
    return out;
}

// ---------------------------------------------------------------- hand-built sections

// A .eh_frame or .debug_frame written entry by entry (x86-64, little-endian, 32-bit DWARF).
class Frames {
public:
    Frames(FrameSection::Kind kind, uint64_t addr) : kind_(kind), addr_(addr) {}

    // A CIE: code alignment 1, data alignment -8, return address column 16, `aug` ("zR", "zRS",
    // "" ...; 'R' gives the FDEs' pointer encoding `enc`), then `insns`. Returns its offset.
    size_t cie(const std::string& aug, std::vector<uint8_t> insns, uint8_t enc = 0x1b) {
        const size_t at = begin();
        u32(kind_ == FrameSection::EhFrame ? 0 : 0xffffffff);
        b_.push_back(1);  // version
        for (char c : aug) b_.push_back(uint8_t(c));
        b_.push_back(0);
        b_.push_back(1);     // code alignment
        b_.push_back(0x78);  // data alignment -8
        b_.push_back(16);    // return address column
        if (!aug.empty() && aug[0] == 'z') {
            b_.push_back(aug.find('R') != std::string::npos ? 1 : 0);
            if (aug.find('R') != std::string::npos) b_.push_back(enc);
        }
        enc_ = aug.find('R') != std::string::npos ? enc : 0;
        aug_ = aug;
        b_.insert(b_.end(), insns.begin(), insns.end());
        end(at);
        return at;
    }

    // An FDE of the CIE at `cie` for [pc, pc + range) with `insns`. Returns its offset.
    size_t fde(size_t cie, uint64_t pc, uint64_t range, std::vector<uint8_t> insns) {
        const size_t at = begin();
        u32(kind_ == FrameSection::EhFrame ? uint32_t(b_.size() - cie) : uint32_t(cie));
        if (kind_ == FrameSection::DebugFrame || enc_ == 0x00 || enc_ == 0x04) {
            u64(pc);
            u64(range);
        } else if (enc_ == 0x1b) {  // pcrel sdata4
            u32(uint32_t(int32_t(int64_t(pc) - int64_t(addr_ + b_.size()))));
            u32(uint32_t(range));
        } else if (enc_ == 0x03) {  // udata4
            u32(uint32_t(pc));
            u32(uint32_t(range));
        }
        if (!aug_.empty() && aug_[0] == 'z') b_.push_back(0);
        b_.insert(b_.end(), insns.begin(), insns.end());
        end(at);
        return at;
    }

    std::vector<uint8_t>& bytes() { return b_; }
    FrameSection section() const { return {kind_, b_.data(), b_.size(), addr_}; }
    CfiTable build() const {
        const FrameSection s = section();
        return CfiTable::build({&s, 1});
    }

private:
    size_t begin() {
        const size_t at = b_.size();
        u32(0);  // length, set by end()
        return at;
    }
    void end(size_t at) {
        while ((b_.size() - at) % 8) b_.push_back(0);  // DW_CFA_nop
        const uint32_t len = uint32_t(b_.size() - at - 4);
        std::memcpy(b_.data() + at, &len, 4);
    }
    void u32(uint32_t v) {
        b_.insert(b_.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4);
    }
    void u64(uint64_t v) {
        b_.insert(b_.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8);
    }

    FrameSection::Kind kind_;
    uint64_t addr_;
    uint8_t enc_ = 0;
    std::string aug_;
    std::vector<uint8_t> b_;
};

// DW_CFA_* with their operands (register numbers and small values as one ULEB byte).
constexpr uint8_t kAdvance = 0x40, kOffset = 0x80, kRestore = 0xc0;  // | delta, | reg
constexpr uint8_t kDefCfa = 0x0c, kDefCfaRegister = 0x0d, kDefCfaOffset = 0x0e, kDefCfaExpression = 0x0f,
                  kRememberState = 0x0a, kRestoreState = 0x0b, kUndefined = 0x07, kSameValue = 0x08,
                  kRegister = 0x09, kValOffset = 0x14, kExpression = 0x10, kAdvanceLoc1 = 0x02;
// The CIE of every x86-64 object: CFA = rsp + 8, return address at CFA - 8.
inline const std::vector<uint8_t> kCieInsns = {kDefCfa, 7, 8, kOffset | 16, 1};
// What a PLT's FDE says after its first instructions (ld's elf_x86_64_eh_frame_plt).
inline const std::vector<uint8_t> kPltExpr = {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};

// A function at [pc, pc + 16) with a frame pointer: push %rbp at +0, mov %rsp,%rbp at +1, an
// early return at +8 (remember_state, CFA back to rsp + 8) and the rest of the body from +9.
inline std::vector<uint8_t> prologue_insns() {
    return {kAdvance | 1, kDefCfaOffset,   16,      kOffset | 6, 2,  // +1: CFA rsp+16, rbp at CFA-16
            kAdvance | 3, kDefCfaRegister, 6,                        // +4: CFA rbp+16
            kAdvance | 4, kRememberState,  kDefCfa, 7,           8,  // +8: CFA rsp+8
            kAdvance | 1, kRestoreState};                            // +9: CFA rbp+16 again
}

}  // namespace perfprof::unwind
