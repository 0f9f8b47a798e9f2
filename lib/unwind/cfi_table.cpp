// Compiling .eh_frame / .debug_frame into rows (DWARF 5 §6.4; the .eh_frame variant as in the
// LSB: CIE pointers relative to the field, augmentation strings, pointer encodings).
//
// Each FDE's program runs once, here: its rows (one per address where a rule changes) go into
// one sorted vector for the whole object, ended by a CfaKind::None row where the FDE's range
// ends and no other FDE begins. Register rule sets are interned (most rows share one of a
// handful), and so are expressions (every PLT entry has the same one).
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
    Reader(const FrameSection& s, size_t pos, size_t end) : s_(s), pos_(pos), end_(std::min(end, s.size)) {}

    bool ok() const { return ok_; }
    size_t pos() const { return pos_; }
    size_t end() const { return end_; }
    bool at_end() const { return pos_ >= end_; }
    void seek(size_t p) { pos_ = p; }

    uint64_t fixed(size_t n) {
        if (!ok_ || pos_ > end_ || end_ - pos_ < n) return fail();
        uint64_t v = 0;
        std::memcpy(&v, s_.data + pos_, n);  // little-endian host and file (x86-64)
        pos_ += n;
        return v;
    }
    uint8_t u8() { return uint8_t(fixed(1)); }
    uint64_t uleb() {
        uint64_t v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (!ok_ || pos_ >= end_) return fail();
            const uint8_t b = s_.data[pos_++];
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
            b = s_.data[pos_++];
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
        const uint64_t field = s_.addr + pos_;
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
        return {s_.data + at, size_t(n)};
    }

private:
    uint64_t fail() {
        ok_ = false;
        return 0;
    }
    const FrameSection& s_;
    size_t pos_, end_;
    bool ok_ = true;
};

struct Cie {
    bool valid = false;
    uint64_t code_align = 1;
    int64_t data_align = -8;
    uint64_t ra = kRa;
    uint8_t fde_enc = kPeAbsptr;
    bool augmented = false;  // 'z': FDEs have augmentation data to skip
    bool signal = false;     // 'S'
    uint8_t address_size = 8;
    size_t insns = 0, insns_end = 0;  // initial instructions, section offsets
};

struct Fde {
    uint64_t begin, end;
    uint32_t section;
    const Cie* cie;
    size_t insns, insns_end;
};

// One entry's header: the length and where it ends, the CIE id / pointer field.
struct Entry {
    size_t start, end;
    uint64_t id;
    size_t id_pos;
    size_t id_size;  // 4, or 8 in a 64-bit .debug_frame
    bool is_cie;
};

bool read_entry(const FrameSection& s, size_t off, Entry& e) {
    Reader r(s, off, s.size);
    uint64_t len = r.fixed(4);
    bool dwarf64 = false;
    if (len == 0xffffffff) {
        len = r.fixed(8);
        dwarf64 = true;
    }
    if (!r.ok() || len == 0 || len > s.size - r.pos()) return false;
    e.start = off;
    e.end = r.pos() + size_t(len);
    e.id_pos = r.pos();
    // .eh_frame's CIE pointer is 4 bytes even after a 64-bit length.
    e.id_size = dwarf64 && s.kind == FrameSection::DebugFrame ? 8 : 4;
    e.id = r.fixed(e.id_size);
    if (!r.ok() || r.pos() > e.end) return false;
    if (s.kind == FrameSection::EhFrame)
        e.is_cie = e.id == 0;
    else
        e.is_cie = e.id_size == 8 ? e.id == ~uint64_t(0) : e.id == 0xffffffff;
    return true;
}

Cie parse_cie(const FrameSection& s, const Entry& e) {
    Cie c;
    Reader r(s, e.id_pos, e.end);
    r.fixed(e.id_size);
    const uint8_t version = r.u8();
    if (version != 1 && version != 3 && version != 4) return c;
    std::string_view aug;
    {
        const size_t at = r.pos();
        while (r.ok() && r.u8() != 0) {
        }
        if (!r.ok()) return c;
        aug = std::string_view(reinterpret_cast<const char*>(s.data + at), r.pos() - at - 1);
    }
    // "eh" (an old GCC's pointer) is not supported, nor anything we cannot skip.
    if (!aug.empty() && aug[0] != 'z') return c;
    if (version == 4) {
        c.address_size = r.u8();
        r.u8();  // segment selector size
    }
    c.code_align = r.uleb();
    c.data_align = r.sleb();
    c.ra = version == 1 ? r.u8() : r.uleb();
    if (s.kind == FrameSection::DebugFrame) c.fde_enc = c.address_size == 4 ? kPeUdata4 : kPeAbsptr;
    if (!aug.empty()) {
        c.augmented = true;
        const uint64_t n = r.uleb();
        if (!r.ok() || n > e.end - r.pos()) return c;
        const size_t data_end = r.pos() + size_t(n);
        for (char a : aug.substr(1)) {
            switch (a) {
                case 'R':
                    c.fde_enc = r.u8();
                    break;
                case 'L':
                    r.u8();  // LSDA encoding: the FDE's augmentation data is skipped whole
                    break;
                case 'P': {
                    const uint8_t enc = r.u8();
                    r.pointer(enc & 0x7f, false);  // the personality routine: not needed
                    break;
                }
                case 'S':
                    c.signal = true;
                    break;
                case 'B':  // AArch64 BTI, MTE tags: no data
                case 'G':
                    break;
                default:
                    // Unknown letters: the length lets us skip the rest of the data.
                    r.seek(data_end);
                    goto done;
            }
        }
    done:
        if (!r.ok() || r.pos() > data_end) return c;
        r.seek(data_end);
    }
    if (!r.ok() || r.pos() > e.end || c.ra >= kRegs || c.code_align == 0) return c;
    c.insns = r.pos();
    c.insns_end = e.end;
    c.valid = true;
    return c;
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

// Builds the rows of every FDE; friend of CfiTable.
class TableBuilder {
public:
    explicit TableBuilder(CfiTable& t) : t_(t) {}

    void build(std::span<const FrameSection> sections) {
        std::vector<Fde> fdes;
        std::vector<std::pair<uint64_t, uint64_t>> covered;  // ranges of earlier sections
        for (uint32_t i = 0; i < sections.size(); i++) {
            const size_t first = fdes.size();
            collect(sections[i], i, covered, fdes);
            for (size_t k = first; k < fdes.size(); k++) covered.emplace_back(fdes[k].begin, fdes[k].end);
            std::sort(covered.begin(), covered.end());
        }
        std::sort(fdes.begin(), fdes.end(), [](const Fde& a, const Fde& b) { return a.begin < b.begin; });
        uint64_t prev_end = 0;
        for (const Fde& f : fdes) {
            if (f.begin < prev_end) {  // overlaps the previous FDE of the same section
                t_.skipped_++;
                continue;
            }
            if (!run(sections[f.section], f)) {
                t_.skipped_++;
                continue;
            }
            t_.fdes_++;
            prev_end = f.end;
        }
        t_.rows_.shrink_to_fit();
        t_.rules_.shrink_to_fit();
        t_.exprs_.shrink_to_fit();
        t_.expr_index_.shrink_to_fit();
    }

private:
    static bool overlaps(const std::vector<std::pair<uint64_t, uint64_t>>& covered, uint64_t b, uint64_t e) {
        auto it = std::upper_bound(covered.begin(), covered.end(), std::make_pair(b, UINT64_MAX));
        if (it != covered.begin() && std::prev(it)->second > b) return true;
        return it != covered.end() && it->first < e;
    }

    void collect(const FrameSection& s, uint32_t index,
                 const std::vector<std::pair<uint64_t, uint64_t>>& covered, std::vector<Fde>& out) {
        std::unordered_map<size_t, Cie>& cies = cies_[index];
        size_t off = 0;
        while (off + 4 <= s.size) {
            Entry e;
            if (!read_entry(s, off, e)) {
                // A zero length ends .eh_frame; anything else is corrupt: stop this section.
                if (off + 4 <= s.size) {
                    uint32_t len;
                    std::memcpy(&len, s.data + off, 4);
                    if (len != 0) t_.skipped_++;
                }
                break;
            }
            off = e.end;
            if (e.is_cie) continue;
            const size_t cie_off = s.kind == FrameSection::EhFrame
                                       ? (e.id <= e.id_pos ? e.id_pos - size_t(e.id) : SIZE_MAX)
                                       : size_t(e.id);
            if (cie_off >= s.size) {
                t_.skipped_++;
                continue;
            }
            auto [it, fresh] = cies.try_emplace(cie_off);
            if (fresh) {
                Entry ce;
                if (read_entry(s, cie_off, ce) && ce.is_cie) it->second = parse_cie(s, ce);
            }
            const Cie& cie = it->second;
            if (!cie.valid) {
                t_.skipped_++;
                continue;
            }
            Reader r(s, e.id_pos + e.id_size, e.end);
            const uint64_t begin = r.pointer(cie.fde_enc);
            const uint64_t len = r.pointer(cie.fde_enc, false);
            if (cie.augmented) r.skip(r.uleb());
            if (!r.ok() || r.pos() > e.end) {
                t_.skipped_++;
                continue;
            }
            // Address 0 or an empty range: an FDE of code the linker dropped.
            if (begin == 0 || len == 0 || begin + len < begin) continue;
            if (overlaps(covered, begin, begin + len)) continue;
            out.push_back({begin, begin + len, index, &cie, r.pos(), e.end});
        }
    }

    // Runs the CIE's initial instructions, then the FDE's, emitting a row at each advance.
    bool run(const FrameSection& s, const Fde& f) {
        const Cie& cie = *f.cie;
        State init;
        uint64_t loc = f.begin;
        const size_t rows_before = t_.rows_.size();
        if (!exec(s, cie, cie.insns, cie.insns_end, init, init, loc, false)) {
            t_.rows_.resize(rows_before);
            return false;
        }
        State st = init;
        loc = f.begin;
        if (!exec(s, cie, f.insns, f.insns_end, st, init, loc, true, f.end)) {
            t_.rows_.resize(rows_before);
            return false;
        }
        if (loc < f.end) emit(loc, st, cie);
        // The end of the range, unless the next FDE starts there (its first row replaces this).
        Row end;
        end.pc = f.end;
        push(end);
        return true;
    }

    // Interprets DW_CFA_* from [pos, end). `init` is the state DW_CFA_restore goes back to.
    bool exec(const FrameSection& s, const Cie& cie, size_t pos, size_t end, State& st, const State& init,
              uint64_t& loc, bool rows, uint64_t fde_end = 0) {
        Reader r(s, pos, end);
        std::vector<State> saved;
        auto advance = [&](uint64_t delta) {
            const uint64_t next = loc + delta * cie.code_align;
            if (rows && next > loc && loc < fde_end) emit(loc, st, cie);
            loc = next;
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
        while (r.ok() && !r.at_end()) {
            const uint8_t op = r.u8();
            const uint8_t low = op & 0x3f;
            switch (op >> 6) {
                case 1:  // DW_CFA_advance_loc
                    advance(low);
                    continue;
                case 2:  // DW_CFA_offset
                    if (!set(low, RuleKind::Offset, int64_t(r.uleb()) * cie.data_align)) return false;
                    continue;
                case 3:  // DW_CFA_restore
                    if (RegRule* rr = reg(low)) *rr = init.regs[low];
                    continue;
                default:
                    break;
            }
            switch (op) {
                case 0x00:  // nop
                    break;
                case 0x01: {  // set_loc
                    const uint64_t to = r.pointer(cie.fde_enc);
                    if (to < loc) return false;
                    if (rows && to > loc && loc < fde_end) emit(loc, st, cie);
                    loc = to;
                    break;
                }
                case 0x02:
                    advance(r.fixed(1));
                    break;
                case 0x03:
                    advance(r.fixed(2));
                    break;
                case 0x04:
                    advance(r.fixed(4));
                    break;
                case 0x05: {  // offset_extended
                    const uint64_t n = r.uleb();
                    if (!set(n, RuleKind::Offset, int64_t(r.uleb()) * cie.data_align)) return false;
                    break;
                }
                case 0x06: {  // restore_extended
                    const uint64_t n = r.uleb();
                    if (RegRule* rr = reg(n)) *rr = init.regs[n];
                    break;
                }
                case 0x07:  // undefined
                    set(r.uleb(), RuleKind::Undefined, 0);
                    break;
                case 0x08:  // same_value
                    set(r.uleb(), RuleKind::SameValue, 0);
                    break;
                case 0x09: {  // register
                    const uint64_t n = r.uleb(), from = r.uleb();
                    if (from >= kRegs) {
                        set(n, RuleKind::Undefined, 0);
                        break;
                    }
                    set(n, RuleKind::Register, int64_t(from));
                    break;
                }
                case 0x0a:  // remember_state
                    if (saved.size() >= kMaxStateStack) return false;
                    saved.push_back(st);
                    break;
                case 0x0b:  // restore_state: the CFA and the registers (DWARF 5 §6.4.2.4)
                    if (saved.empty()) return false;
                    st = saved.back();
                    saved.pop_back();
                    break;
                case 0x0c: {  // def_cfa
                    const uint64_t n = r.uleb();
                    if (!def_cfa(st, n, int64_t(r.uleb()))) return false;
                    break;
                }
                case 0x0d:  // def_cfa_register
                    if (!def_cfa(st, r.uleb(), st.cfa_kind == CfaKind::RegOffset ? st.cfa_offset : 0))
                        return false;
                    break;
                case 0x0e:  // def_cfa_offset
                    if (!def_offset(st, int64_t(r.uleb()))) return false;
                    break;
                case 0x0f: {  // def_cfa_expression
                    const int32_t e = expr(r.block(r.uleb()));
                    if (e < 0) return false;
                    st.cfa_kind = CfaKind::Expression;
                    st.cfa_offset = e;
                    break;
                }
                case 0x10:    // expression
                case 0x16: {  // val_expression
                    const uint64_t n = r.uleb();
                    const int32_t e = expr(r.block(r.uleb()));
                    if (e < 0) return false;
                    set(n, op == 0x10 ? RuleKind::Expression : RuleKind::ValExpression, e);
                    break;
                }
                case 0x11: {  // offset_extended_sf
                    const uint64_t n = r.uleb();
                    if (!set(n, RuleKind::Offset, r.sleb() * cie.data_align)) return false;
                    break;
                }
                case 0x12: {  // def_cfa_sf
                    const uint64_t n = r.uleb();
                    if (!def_cfa(st, n, r.sleb() * cie.data_align)) return false;
                    break;
                }
                case 0x13:  // def_cfa_offset_sf
                    if (!def_offset(st, r.sleb() * cie.data_align)) return false;
                    break;
                case 0x14: {  // val_offset
                    const uint64_t n = r.uleb();
                    if (!set(n, RuleKind::ValOffset, int64_t(r.uleb()) * cie.data_align)) return false;
                    break;
                }
                case 0x15: {  // val_offset_sf
                    const uint64_t n = r.uleb();
                    if (!set(n, RuleKind::ValOffset, r.sleb() * cie.data_align)) return false;
                    break;
                }
                case 0x2e:  // GNU_args_size
                    r.uleb();
                    break;
                case 0x2f: {  // GNU_negative_offset_extended
                    const uint64_t n = r.uleb();
                    if (!set(n, RuleKind::Offset, -int64_t(r.uleb()) * cie.data_align)) return false;
                    break;
                }
                default:  // unknown (or another architecture's): the FDE cannot be trusted
                    return false;
            }
        }
        return r.ok();
    }

    static bool def_cfa(State& st, uint64_t reg, int64_t off) {
        if (reg >= kRegs || off < INT32_MIN || off > INT32_MAX) {
            st.cfa_kind = CfaKind::None;  // a register we do not track: no CFA here
            return reg >= kRegs;
        }
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
        if (bytes.empty() && bytes.data() == nullptr) return -1;
        std::string key(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        auto [it, fresh] = exprs_.try_emplace(std::move(key), int32_t(t_.expr_index_.size()));
        if (fresh) {
            t_.expr_index_.emplace_back(uint32_t(t_.exprs_.size()), uint32_t(bytes.size()));
            t_.exprs_.insert(t_.exprs_.end(), bytes.begin(), bytes.end());
        }
        return it->second;
    }

    void emit(uint64_t pc, const State& st, const Cie& cie) {
        Row row;
        row.pc = pc;
        row.cfa_kind = st.cfa_kind;
        row.cfa_reg = st.cfa_reg;
        row.cfa_offset = int32_t(st.cfa_offset);
        row.flags = cie.signal ? kSignalFrame : 0;
        // The rule set: every register whose rule is not "same value", the return address's
        // column (cie.ra) stored as kRa.
        rule_key_.clear();
        RegRule set[kRegs];
        uint8_t n = 0;
        for (int i = 0; i < kRegs; i++) {
            RegRule rr = st.regs[i];
            if (uint64_t(i) == cie.ra)
                rr.reg = kRa;
            else if (i == kRa)
                continue;
            if (rr.kind == RuleKind::SameValue) continue;
            set[n++] = rr;
        }
        std::sort(set, set + n, [](const RegRule& a, const RegRule& b) { return a.reg < b.reg; });
        rule_key_.assign(reinterpret_cast<const char*>(set), n * sizeof(RegRule));
        auto [it, fresh] = rule_sets_.try_emplace(rule_key_, uint32_t(t_.rules_.size()));
        if (fresh) t_.rules_.insert(t_.rules_.end(), set, set + n);
        row.rules = it->second;
        row.nrules = n;
        push(row);
    }

    // Appends a row: one at the same pc as the last replaces it; one equal to the last in all
    // but pc adds nothing.
    void push(const Row& row) {
        std::vector<Row>& rows = t_.rows_;
        if (!rows.empty() && rows.back().pc == row.pc) rows.pop_back();
        if (!rows.empty()) {
            const Row& b = rows.back();
            if (b.cfa_kind == row.cfa_kind && b.cfa_reg == row.cfa_reg && b.cfa_offset == row.cfa_offset &&
                b.rules == row.rules && b.nrules == row.nrules && b.flags == row.flags)
                return;
        }
        if (rows.empty() && row.cfa_kind == CfaKind::None) return;
        rows.push_back(row);
    }

    CfiTable& t_;
    std::unordered_map<uint32_t, std::unordered_map<size_t, Cie>> cies_;  // per section, by offset
    std::unordered_map<std::string, uint32_t> rule_sets_;
    std::unordered_map<std::string, int32_t> exprs_;
    std::string rule_key_;
};

CfiTable CfiTable::build(std::span<const FrameSection> sections) {
    CfiTable t;
    TableBuilder(t).build(sections);
    return t;
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
