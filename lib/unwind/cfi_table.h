// Call-frame information of one ELF object (.eh_frame, .debug_frame) compiled into a table of
// unwinding rows: for each address range of the object, how to find the canonical frame address
// (CFA) and where the caller's registers were saved. Built once per object, beside its symbols
// (sym::Object::cfi()), shared by every process that maps it; a lookup is a binary search, with
// no allocation.
//
// Our own table instead of libdw's dwarf_cfi_addrframe(): libdw interprets the FDE's program on
// every lookup and returns a malloc'd Dwarf_Frame, which costs microseconds per frame; the rows
// here are interpreted once, and a frame costs one binary search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace perfprof::unwind {

// DWARF register numbers of x86-64 (System V psABI §3.6.2); 16 is the return address column.
enum DwarfReg : uint8_t {
    kRax = 0,
    kRdx = 1,
    kRcx = 2,
    kRbx = 3,
    kRsi = 4,
    kRdi = 5,
    kRbp = 6,
    kRsp = 7,
    kR8 = 8,
    kR15 = 15,
    kRa = 16,
};
constexpr int kRegs = 17;  // the registers the unwinder tracks: 0..16

// How a register of the caller is found (DWARF 5 §6.4.1); `value` below says with what.
enum class RuleKind : uint8_t {
    Undefined,      // not recoverable (the return address: the outermost frame)
    SameValue,      // unchanged by the callee
    Offset,         // saved at CFA + value
    ValOffset,      // is CFA + value
    Register,       // is in register `value`
    Expression,     // saved at the address expression `value` computes (CFA pushed first)
    ValExpression,  // is the value expression `value` computes (CFA pushed first)
};

struct RegRule {
    uint8_t reg;  // DWARF register number < kRegs
    RuleKind kind;
    int32_t value;  // offset, register number or expression index, by kind
};

enum class CfaKind : uint8_t {
    None,        // no call-frame information covers these addresses
    RegOffset,   // CFA = register cfa_reg + cfa_offset
    Expression,  // CFA = the value of expression cfa_offset
};

struct Row {
    uint64_t pc = 0;         // first address (object address space); the row ends where the next starts
    int32_t cfa_offset = 0;  // or the expression index (CfaKind::Expression)
    uint32_t rules = 0;      // first of this row's RegRules in CfiTable::rules()
    CfaKind cfa_kind = CfaKind::None;
    uint8_t cfa_reg = 0;
    uint8_t nrules = 0;  // registers with a rule other than SameValue
    uint8_t flags = 0;   // kSignalFrame
};
constexpr uint8_t kSignalFrame = 1;  // the FDE's CIE has augmentation 'S': a signal trampoline

// One section of call-frame information, as it lies in the file. `addr` is its sh_addr (needed
// for pc-relative pointer encodings of .eh_frame).
struct FrameSection {
    enum Kind : uint8_t { EhFrame, DebugFrame };
    Kind kind;
    const uint8_t* data;
    size_t size;
    uint64_t addr;
};

class CfiTable {
public:
    CfiTable() = default;

    // Every FDE of `sections`, which come in priority order: an FDE overlapping the range of an
    // FDE of an earlier section is left out (.eh_frame before .debug_frame, the binary before
    // its debug file). Malformed entries are skipped and counted, never read past the section.
    static CfiTable build(std::span<const FrameSection> sections);

    // The row covering `pc` (object address space), or nullptr where no FDE does.
    const Row* find(uint64_t pc) const;
    std::span<const RegRule> rules(const Row& r) const { return {rules_.data() + r.rules, r.nrules}; }
    // The bytes of a DWARF expression (CfaKind::Expression, RuleKind::Expression/ValExpression).
    std::span<const uint8_t> expression(int32_t index) const;

    bool empty() const { return rows_.empty(); }
    size_t row_count() const { return rows_.size(); }
    size_t fde_count() const { return fdes_; }
    size_t skipped() const { return skipped_; }  // malformed CIEs/FDEs and unknown opcodes
    size_t memory_bytes() const;
    const std::vector<Row>& rows() const { return rows_; }

private:
    friend class TableBuilder;
    std::vector<Row> rows_;       // sorted by pc; CfaKind::None rows end an FDE's range
    std::vector<RegRule> rules_;  // rule sets, shared by rows that have the same one
    std::vector<uint8_t> exprs_;  // expression bytes
    std::vector<std::pair<uint32_t, uint32_t>> expr_index_;  // (offset, length) in exprs_
    size_t fdes_ = 0, skipped_ = 0;
};

}  // namespace perfprof::unwind
