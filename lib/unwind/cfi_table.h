// Call-frame information of one ELF object (.eh_frame, .debug_frame) compiled into unwinding
// rows: for each address range, how to find the canonical frame address (CFA) and where the
// caller's registers were saved. One table per object, beside its symbols (sym::Object::cfi()),
// shared by every process that maps it.
//
// Built in two steps. At first use of the object its FDEs are indexed (a scan of the entry
// headers: a few ms for a 100 MB library); an FDE's program runs the first time a pc in its
// range is looked up, and its rows are kept. A lookup after that is two binary searches, with no
// allocation. A profile touches a few hundred of a big program's tens of thousands of FDEs, so
// compiling everything up front (100-170 ms and 12-22 MB for cc1plus or libLLVM) would stall
// the reader long enough to lose samples.
//
// Our own rows instead of libdw's dwarf_cfi_addrframe(): libdw interprets the FDE's program on
// every lookup and returns a malloc'd Dwarf_Frame; here a program runs once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
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

    // Indexes every FDE of `sections`, which come in priority order: an FDE overlapping the
    // range of an FDE of an earlier section is left out (.eh_frame before .debug_frame, the
    // binary before its debug file). The sections' bytes are copied. Malformed entries are
    // skipped and counted, never read past.
    static CfiTable build(std::span<const FrameSection> sections);

    // The row covering `pc` (object address space), or nullptr where no FDE does (or its
    // program is malformed). Runs the FDE's program on first use. The pointer, and the spans
    // of rules() and expression(), stay valid until the next find(). One thread at a time.
    const Row* find(uint64_t pc);
    std::span<const RegRule> rules(const Row& r) const { return {rules_.data() + r.rules, r.nrules}; }
    // The bytes of a DWARF expression (CfaKind::Expression, RuleKind::Expression/ValExpression).
    std::span<const uint8_t> expression(int32_t index) const;

    struct Range {
        uint64_t begin, end;
    };
    // Every indexed FDE's [begin, end), sorted (tests, statistics).
    std::vector<Range> ranges() const;
    bool empty() const { return fdes_.empty(); }
    size_t fde_count() const { return fdes_.size(); }
    size_t compiled_fdes() const { return compiled_; }
    size_t row_count() const { return rows_.size(); }  // rows of the FDEs compiled so far
    size_t skipped() const { return skipped_; }        // malformed CIEs, FDEs and programs
    size_t memory_bytes() const;

private:
    friend class CfiProgram;
    struct Cie {
        uint64_t code_align = 1;
        int64_t data_align = -8;
        uint32_t section = 0;
        uint32_t insns = 0, insns_end = 0;  // initial instructions: offsets in the section
        uint8_t ra = kRa;
        uint8_t fde_enc = 0;
        bool signal = false;     // augmentation 'S'
        bool augmented = false;  // 'z': FDEs have augmentation data to skip
    };
    struct Fde {
        uint64_t begin, end;
        uint32_t cie;                       // index in cies_
        uint32_t insns, insns_end;          // offsets in the CIE's section
        uint32_t first_row = 0, nrows = 0;  // compiled rows in rows_
        enum : uint8_t { Pending, Compiled, Bad } state = Pending;
    };
    struct Section {
        FrameSection::Kind kind;
        uint64_t addr;
        std::string bytes;
    };
    bool compile(Fde& f);

    std::vector<Section> sections_;
    std::vector<Cie> cies_;
    std::vector<Fde> fdes_;       // sorted by begin, not overlapping
    std::vector<Row> rows_;       // per compiled FDE, contiguous and sorted by pc
    std::vector<RegRule> rules_;  // rule sets, shared by rows that have the same one
    std::vector<uint8_t> exprs_;  // expression bytes
    std::vector<std::pair<uint32_t, uint32_t>> expr_index_;  // (offset, length) in exprs_
    std::unordered_map<std::string, uint32_t> rule_sets_;    // rule set bytes → index in rules_
    std::unordered_map<std::string, int32_t> expr_ids_;      // expression bytes → index
    size_t compiled_ = 0, skipped_ = 0;
};

}  // namespace perfprof::unwind
