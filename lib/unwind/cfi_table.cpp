// Indexing .eh_frame / .debug_frame and compiling FDE programs into rows (DWARF 5 §6.4; the
// .eh_frame variant as in the LSB: CIE pointers relative to the field, augmentation strings,
// pointer encodings). Register rule sets are interned (most rows share one of a handful), and
// so are expressions (every PLT entry has the same one).
#include "unwind/cfi_table.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

namespace perfprof::unwind {

namespace {

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeAbsptr = 0x00, kPeUleb = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
                  kPeSleb = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c;
constexpr uint8_t kPePcrel = 0x10;

constexpr size_t kMaxStateStack = 64;  // DW_CFA_remember_state depth

// Bounds-checked reading of one section. A read past the end sets !ok() and returns 0.
class Reader {
public:
    Reader(std::string_view bytes, uint64_t addr, size_t pos, size_t end)
        : data_(reinterpret_cast<const uint8_t*>(bytes.data())),
          addr_(addr),
          pos_(pos),
          end_(std::min(end, bytes.size())) {}

    bool ok() const { return ok_; }
    size_t pos() const { return pos_; }
    size_t end() const { return end_; }
    bool at_end() const { return pos_ >= end_; }
    void seek(size_t p) { pos_ = p; }

    uint64_t fixed(size_t n) {
        if (!ok_ || pos_ > end_ || end_ - pos_ < n) return fail();
        uint64_t v = 0;
        std::memcpy(&v, data_ + pos_, n);  // little-endian host and file (x86-64)
        pos_ += n;
        return v;
    }
    uint8_t u8() { return uint8_t(fixed(1)); }
    uint64_t uleb() {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!ok_ || pos_ >= end_) return fail();
            const uint8_t b = data_[pos_++];
            if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
    }
    int64_t sleb() {
        uint64_t v = 0;
        unsigned shift = 0;
        uint8_t b;
        do {
            if (!ok_ || pos_ >= end_) return int64_t(fail());
            b = data_[pos_++];
            if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40)) v |= ~uint64_t(0) << shift;
        return int64_t(v);
    }
    bool skip(uint64_t n) {
        if (!ok_ || pos_ > end_ || n > end_ - pos_) return fail(), false;
        pos_ += size_t(n);
        return true;
    }
    // A DW_EH_PE_* encoded pointer; `with_base` false for an FDE's range (a length: the
    // application bits do not apply).
    uint64_t pointer(uint8_t enc, bool with_base = true) {
        const uint64_t field = addr_ + pos_;
        uint64_t v;
        switch (enc & 0x0f) {
            case kPeAbsptr:
            case kPeUdata8:
            case kPeSdata8:
                v = fixed(8);
                break;
            case kPeUleb:
                v = uleb();
                break;
            case kPeSleb:
                v = uint64_t(sleb());
                break;
            case kPeUdata2:
                v = fixed(2);
                break;
            case kPeSdata2:
                v = uint64_t(int64_t(int16_t(fixed(2))));
                break;
            case kPeUdata4:
                v = fixed(4);
                break;
            case kPeSdata4:
                v = uint64_t(int64_t(int32_t(fixed(4))));
                break;
            default:
                return fail();
        }
        if (!with_base) return v;
        switch (enc & 0x70) {
            case 0:
                return v;
            case kPePcrel:
                return v + field;
            default:  // text-, data-, function-relative, aligned: not used for x86-64 FDEs
                return fail();
        }
    }
    std::span<const uint8_t> block(uint64_t n) {
        const size_t at = pos_;
        if (!skip(n)) return {};
        return {data_ + at, size_t(n)};
    }

private:
    uint64_t fail() {
        ok_ = false;
        return 0;
    }
    const uint8_t* data_;
    uint64_t addr_;
    size_t pos_, end_;
    bool ok_ = true;
};

// One entry's header: the length and where it ends, the CIE id / pointer field.
struct Entry {
    size_t start, end;
    uint64_t id;
    size_t id_pos;
    size_t id_size;  // 4, or 8 in a 64-bit .debug_frame
    bool is_cie;
};

bool read_entry(std::string_view bytes, FrameSection::Kind kind, size_t off, Entry& e) {
    Reader r(bytes, 0, off, bytes.size());
    uint64_t len = r.fixed(4);
    bool dwarf64 = false;
    if (len == 0xffffffff) {
        len = r.fixed(8);
        dwarf64 = true;
    }
    if (!r.ok() || len == 0 || len > bytes.size() - r.pos()) return false;
    e.start = off;
    e.end = r.pos() + size_t(len);
    e.id_pos = r.pos();
    // .eh_frame's CIE pointer is 4 bytes even after a 64-bit length.
    e.id_size = dwarf64 && kind == FrameSection::DebugFrame ? 8 : 4;
    e.id = r.fixed(e.id_size);
    if (!r.ok() || r.pos() > e.end) return false;
    if (kind == FrameSection::EhFrame)
        e.is_cie = e.id == 0;
    else
        e.is_cie = e.id_size == 8 ? e.id == ~uint64_t(0) : e.id == 0xffffffff;
    return true;
}

// What an FDE needs of its CIE; `valid` false for one we cannot use.
struct ParsedCie {
    bool valid = false;
    bool augmented = false;  // 'z': FDEs have augmentation data to skip
    uint64_t code_align = 1;
    int64_t data_align = -8;
    uint64_t ra = kRa;
    uint8_t fde_enc = kPeAbsptr;
    bool signal = false;
    size_t insns = 0, insns_end = 0;
};

ParsedCie parse_cie(std::string_view bytes, uint64_t addr, FrameSection::Kind kind, const Entry& e) {
    ParsedCie c;
    Reader r(bytes, addr, e.id_pos + e.id_size, e.end);
    const uint8_t version = r.u8();
    if (version != 1 && version != 3 && version != 4) return c;
    std::string_view aug;
    {
        const size_t at = r.pos();
        while (r.ok() && r.u8() != 0) {
        }
        if (!r.ok()) return c;
        aug = bytes.substr(at, r.pos() - at - 1);
    }
    // "eh" (an old GCC's pointer) is not supported, nor anything we cannot skip.
    if (!aug.empty() && aug[0] != 'z') return c;
    uint8_t address_size = 8;
    if (version == 4) {
        address_size = r.u8();
        r.u8();  // segment selector size
    }
    c.code_align = r.uleb();
    c.data_align = r.sleb();
    c.ra = version == 1 ? r.u8() : r.uleb();
    if (kind == FrameSection::DebugFrame) c.fde_enc = address_size == 4 ? kPeUdata4 : kPeAbsptr;
    if (!aug.empty()) {
        c.augmented = true;
        const uint64_t n = r.uleb();
        if (!r.ok() || n > e.end - r.pos()) return c;
        const size_t data_end = r.pos() + size_t(n);
        for (char a : aug.substr(1)) {
            if (a == 'R') {
                c.fde_enc = r.u8();
            } else if (a == 'L') {
                r.u8();  // LSDA encoding: the FDE's augmentation data is skipped whole
            } else if (a == 'P') {
                const uint8_t enc = r.u8();
                r.pointer(enc & 0x7f, false);  // the personality routine: not needed
            } else if (a == 'S') {
                c.signal = true;
            } else if (a != 'B' && a != 'G') {  // AArch64 BTI and MTE carry no data
                break;                          // unknown: the length lets us skip the rest of the data
            }
        }
        if (!r.ok() || r.pos() > data_end) return c;
        r.seek(data_end);
    }
    if (!r.ok() || r.pos() > e.end || c.ra >= kRegs || c.code_align == 0) return c;
    c.insns = r.pos();
    c.insns_end = e.end;
    c.valid = true;
    return c;
}

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

}  // namespace

// Runs FDE programs into rows; friend of CfiTable.
class Compiler {
public:
    Compiler(CfiTable& t, const CfiTable::Fde& f)
        : t_(t), f_(f), cie_(t.cies_[f.cie]), sec_(t.sections_[cie_.section]), bytes_(sec_.bytes) {}

    // The CIE's initial instructions, then the FDE's, a row at each advance. False (and no row
    // added) for a program we cannot follow.
    bool run() {
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

private:
    // Interprets DW_CFA_* from [pos, end). `init` is the state DW_CFA_restore goes back to.
    bool exec(size_t pos, size_t end, State& st, const State& init, uint64_t& loc, bool rows) {
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
    bool op0(Reader& r, uint8_t op, State& st, const State& init, uint64_t& loc, std::vector<State>& saved,
             Advance& advance, Reg& reg, Set& set) {
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
                return from < kRegs ? set(n, RuleKind::Register, int64_t(from))
                                    : set(n, RuleKind::Undefined, 0);
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

    static bool def_cfa(State& st, uint64_t reg, int64_t off) {
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
    static bool def_offset(State& st, int64_t off) {
        if (off < INT32_MIN || off > INT32_MAX) return false;
        if (st.cfa_kind == CfaKind::RegOffset) st.cfa_offset = off;
        return true;
    }

    int32_t expr(std::span<const uint8_t> bytes) {
        if (bytes.data() == nullptr) return -1;
        std::string key(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        auto [it, fresh] = t_.expr_ids_.try_emplace(std::move(key), int32_t(t_.expr_index_.size()));
        if (fresh) {
            t_.expr_index_.emplace_back(uint32_t(t_.exprs_.size()), uint32_t(bytes.size()));
            t_.exprs_.insert(t_.exprs_.end(), bytes.begin(), bytes.end());
        }
        return it->second;
    }

    void emit(uint64_t pc, const State& st) {
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

    CfiTable& t_;
    const CfiTable::Fde& f_;
    const CfiTable::Cie& cie_;
    const CfiTable::Section& sec_;
    std::string_view bytes_;
    std::string key_;
    size_t rows_added_ = 0;
};

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
    if (!Compiler(*this, f).run()) {
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
