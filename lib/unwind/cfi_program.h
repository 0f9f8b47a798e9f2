// Compiling the call-frame program of one FDE into rows of its CfiTable: the CIE's initial
// instructions, then the FDE's, a row at each DW_CFA_advance_loc. A friend of CfiTable, which
// runs it the first time a pc of the FDE's range is looked up (CfiTable::find).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unwind/cfi_table.h"

namespace perfprof::unwind {

namespace cfi {
class Reader;
struct State;
}  // namespace cfi

class CfiProgram {
public:
    CfiProgram(CfiTable& t, const CfiTable::Fde& f);

    // Appends the FDE's rows to the table (rule sets and expressions interned). False (and no
    // row added) for a program we cannot follow.
    bool run();

private:
    bool exec(size_t pos, size_t end, cfi::State& st, const cfi::State& init, uint64_t& loc, bool rows);
    // One instruction whose operands are not in its opcode byte.
    template <class Advance, class Reg, class Set>
    bool op0(cfi::Reader& r, uint8_t op, cfi::State& st, const cfi::State& init, uint64_t& loc,
             std::vector<cfi::State>& saved, Advance& advance, Reg& reg, Set& set);
    static bool def_cfa(cfi::State& st, uint64_t reg, int64_t off);
    static bool def_offset(cfi::State& st, int64_t off);
    int32_t expr(std::span<const uint8_t> bytes);  // the index of an interned expression
    void emit(uint64_t pc, const cfi::State& st);  // a row of the state at pc

    CfiTable& t_;
    const CfiTable::Fde& f_;
    const CfiTable::Cie& cie_;
    const CfiTable::Section& sec_;
    std::string_view bytes_;
    std::string key_;
    size_t rows_added_ = 0;
};

}  // namespace perfprof::unwind
