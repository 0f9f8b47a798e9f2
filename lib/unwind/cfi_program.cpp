// Compiling the program of an FDE into rows (unwind/cfi_program.h): DW_CFA_* of DWARF 5 §6.4.2
// and the GNU extensions. Register rule sets are interned (most rows share one of a handful), and
// so are expressions (every PLT entry has the same one).
#include "unwind/cfi_program.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "unwind/cfi_entries.h"

namespace perfprof::unwind {

using cfi::Reader;

namespace {

constexpr size_t kMaxStateStack = 64;  // DW_CFA_remember_state depth

// Factored offsets (operand × the CIE's data alignment). A product beyond the 32 bits a rule
// holds becomes INT64_MAX, which every rule refuses (a wrapped product could look valid).
int64_t sfactor(int64_t v, int64_t align) {
    int64_t out;
    return __builtin_mul_overflow(v, align, &out) ? INT64_MAX : out;
}
int64_t ufactor(uint64_t v, int64_t align) {
    return v > uint64_t(INT64_MAX) ? INT64_MAX : sfactor(int64_t(v), align);
}
int64_t nfactor(uint64_t v, int64_t align) {  // -(v × align): GNU_negative_offset_extended
    const int64_t p = ufactor(v, align);
    return p == INT64_MAX || p == INT64_MIN ? INT64_MAX : -p;
}

}  // namespace

namespace cfi {

// The rules in force at one address while a program runs.
struct State {
    CfaKind cfa_kind = CfaKind::None;
    uint8_t cfa_reg = 0;
    int64_t cfa_offset = 0;  // or the expression index
    RegRule regs[kRegs];
    State() {
        for (int i = 0; i < kRegs; i++) regs[i] = {uint8_t(i), RuleKind::SameValue, 0};
    }
};

}  // namespace cfi

using cfi::State;

CfiProgram::CfiProgram(CfiTable& t, const CfiTable::Fde& f)
    : t_(t), f_(f), cie_(t.cies_[f.cie]), sec_(t.sections_[cie_.section]), bytes_(sec_.bytes) {}

bool CfiProgram::run() {
    const size_t before = t_.rows_.size();
    State init;
    uint64_t loc = f_.begin;
    bool ok = exec(cie_.insns, cie_.insns_end, init, init, loc, false);
    State st = init;
    loc = f_.begin;
    ok = ok && exec(f_.insns, f_.insns_end, st, init, loc, true);
    if (ok && loc < f_.end) emit(loc, st);
    if (!ok || t_.rows_.size() == before) {
        t_.rows_.resize(before);
        return false;
    }
    return true;
}

// Interprets DW_CFA_* from [pos, end). `init` is the state DW_CFA_restore goes back to.
bool CfiProgram::exec(size_t pos, size_t end, State& st, const State& init, uint64_t& loc, bool rows) {
    Reader r(bytes_, sec_.addr, pos, end);
    std::vector<State> saved;
    auto advance = [&](uint64_t to) {
        if (to < loc) return false;
        if (rows && to > loc && loc < f_.end) emit(loc, st);
        loc = to;
        return true;
    };
    auto reg = [&](uint64_t n) -> RegRule* { return n < kRegs ? &st.regs[n] : nullptr; };
    auto set = [&](uint64_t n, RuleKind k, int64_t v) {
        if (RegRule* rr = reg(n)) {
            if (v < INT32_MIN || v > INT32_MAX) return false;
            rr->kind = k;
            rr->value = int32_t(v);
        }
        return true;  // registers we do not track: ignored
    };
    const uint64_t ca = cie_.code_align;
    const int64_t da = cie_.data_align;
    while (r.ok() && !r.at_end()) {
        const uint8_t op = r.u8();
        const uint8_t low = op & 0x3f;
        bool ok = true;
        switch (op >> 6) {
            case 1:  // DW_CFA_advance_loc
                ok = advance(loc + low * ca);
                break;
            case 2:  // DW_CFA_offset
                ok = set(low, RuleKind::Offset, ufactor(r.uleb(), da));
                break;
            case 3:  // DW_CFA_restore
                if (RegRule* rr = reg(low)) *rr = init.regs[low];
                break;
            default:
                ok = op0(r, op, st, init, loc, saved, advance, reg, set);
        }
        if (!ok) return false;
    }
    return r.ok();
}

template <class Advance, class Reg, class Set>
bool CfiProgram::op0(Reader& r, uint8_t op, State& st, const State& init, uint64_t& loc,
                     std::vector<State>& saved, Advance& advance, Reg& reg, Set& set) {
    const uint64_t ca = cie_.code_align;
    const int64_t da = cie_.data_align;
    switch (op) {
        case 0x00:  // nop
            return true;
        case 0x01:  // set_loc
            return advance(r.pointer(cie_.fde_enc));
        case 0x02:  // advance_loc1, 2, 4
            return advance(loc + r.fixed(1) * ca);
        case 0x03:
            return advance(loc + r.fixed(2) * ca);
        case 0x04:
            return advance(loc + r.fixed(4) * ca);
        case 0x05: {  // offset_extended
            const uint64_t n = r.uleb();
            return set(n, RuleKind::Offset, ufactor(r.uleb(), da));
        }
        case 0x06: {  // restore_extended
            const uint64_t n = r.uleb();
            if (RegRule* rr = reg(n)) *rr = init.regs[n];
            return true;
        }
        case 0x07:  // undefined
            return set(r.uleb(), RuleKind::Undefined, 0);
        case 0x08:  // same_value
            return set(r.uleb(), RuleKind::SameValue, 0);
        case 0x09: {  // register
            const uint64_t n = r.uleb(), from = r.uleb();
            return from < kRegs ? set(n, RuleKind::Register, int64_t(from)) : set(n, RuleKind::Undefined, 0);
        }
        case 0x0a:  // remember_state
            if (saved.size() >= kMaxStateStack) return false;
            saved.push_back(st);
            return true;
        case 0x0b:  // restore_state: the CFA and the registers (DWARF 5 §6.4.2.4)
            if (saved.empty()) return false;
            st = saved.back();
            saved.pop_back();
            return true;
        case 0x0c: {  // def_cfa
            const uint64_t n = r.uleb();
            return def_cfa(st, n, int64_t(r.uleb()));
        }
        case 0x0d:  // def_cfa_register
            return def_cfa(st, r.uleb(), st.cfa_kind == CfaKind::RegOffset ? st.cfa_offset : 0);
        case 0x0e:  // def_cfa_offset
            return def_offset(st, int64_t(r.uleb()));
        case 0x0f: {  // def_cfa_expression
            const int32_t e = expr(r.block(r.uleb()));
            if (e < 0) return false;
            st.cfa_kind = CfaKind::Expression;
            st.cfa_offset = e;
            return true;
        }
        case 0x10:    // expression
        case 0x16: {  // val_expression
            const uint64_t n = r.uleb();
            const int32_t e = expr(r.block(r.uleb()));
            return e >= 0 && set(n, op == 0x10 ? RuleKind::Expression : RuleKind::ValExpression, e);
        }
        case 0x11: {  // offset_extended_sf
            const uint64_t n = r.uleb();
            return set(n, RuleKind::Offset, sfactor(r.sleb(), da));
        }
        case 0x12: {  // def_cfa_sf
            const uint64_t n = r.uleb();
            return def_cfa(st, n, sfactor(r.sleb(), da));
        }
        case 0x13:  // def_cfa_offset_sf
            return def_offset(st, sfactor(r.sleb(), da));
        case 0x14: {  // val_offset
            const uint64_t n = r.uleb();
            return set(n, RuleKind::ValOffset, ufactor(r.uleb(), da));
        }
        case 0x15: {  // val_offset_sf
            const uint64_t n = r.uleb();
            return set(n, RuleKind::ValOffset, sfactor(r.sleb(), da));
        }
        case 0x2e:  // GNU_args_size
            r.uleb();
            return true;
        case 0x2f: {  // GNU_negative_offset_extended
            const uint64_t n = r.uleb();
            return set(n, RuleKind::Offset, nfactor(r.uleb(), da));
        }
        default:  // unknown (or another architecture's): the FDE cannot be trusted
            return false;
    }
}

bool CfiProgram::def_cfa(State& st, uint64_t reg, int64_t off) {
    if (reg >= kRegs) {
        st.cfa_kind = CfaKind::None;  // a register we do not track: no CFA here
        return true;
    }
    if (off < INT32_MIN || off > INT32_MAX) return false;
    st.cfa_kind = CfaKind::RegOffset;
    st.cfa_reg = uint8_t(reg);
    st.cfa_offset = off;
    return true;
}

bool CfiProgram::def_offset(State& st, int64_t off) {
    if (off < INT32_MIN || off > INT32_MAX) return false;
    if (st.cfa_kind == CfaKind::RegOffset) st.cfa_offset = off;
    return true;
}

int32_t CfiProgram::expr(std::span<const uint8_t> bytes) {
    if (bytes.data() == nullptr) return -1;
    std::string key(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    auto [it, fresh] = t_.expr_ids_.try_emplace(std::move(key), int32_t(t_.expr_index_.size()));
    if (fresh) {
        t_.expr_index_.emplace_back(uint32_t(t_.exprs_.size()), uint32_t(bytes.size()));
        t_.exprs_.insert(t_.exprs_.end(), bytes.begin(), bytes.end());
    }
    return it->second;
}

void CfiProgram::emit(uint64_t pc, const State& st) {
    Row row;
    row.pc = pc;
    row.cfa_kind = st.cfa_kind;
    row.cfa_reg = st.cfa_reg;
    row.cfa_offset = int32_t(st.cfa_offset);
    row.flags = cie_.signal ? kSignalFrame : 0;
    // The rule set: every register whose rule is not "same value", the return address's
    // column (the CIE's) as kRa.
    RegRule set[kRegs];
    uint8_t n = 0;
    for (int i = 0; i < kRegs; i++) {
        RegRule rr = st.regs[i];
        if (i == cie_.ra)
            rr.reg = kRa;
        else if (i == kRa)
            continue;
        if (rr.kind != RuleKind::SameValue) set[n++] = rr;
    }
    std::sort(set, set + n, [](const RegRule& a, const RegRule& b) { return a.reg < b.reg; });
    key_.assign(reinterpret_cast<const char*>(set), n * sizeof(RegRule));
    auto [it, fresh] = t_.rule_sets_.try_emplace(key_, uint32_t(t_.rules_.size()));
    if (fresh) t_.rules_.insert(t_.rules_.end(), set, set + n);
    row.rules = it->second;
    row.nrules = n;
    // One at the same pc as the last replaces it; one equal to the last but for its pc
    // adds nothing.
    std::vector<Row>& rows = t_.rows_;
    const size_t first = t_.rows_.size() - rows_added_;
    if (rows_added_ && rows.back().pc == pc) {
        rows.pop_back();
        rows_added_--;
    }
    if (rows.size() > first) {
        const Row& b = rows.back();
        if (b.cfa_kind == row.cfa_kind && b.cfa_reg == row.cfa_reg && b.cfa_offset == row.cfa_offset &&
            b.rules == row.rules && b.nrules == row.nrules)
            return;
    }
    rows.push_back(row);
    rows_added_++;
}

}  // namespace perfprof::unwind
