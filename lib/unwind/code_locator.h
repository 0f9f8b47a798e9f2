// What the unwinder needs to know of a process's code, given by whoever keeps its mappings
// (sym::Symbolizer): lib/unwind looks nothing up itself, so imports go one way
// (unwind ← sym ← stack).
#pragma once

#include <cstdint>

namespace perfprof::unwind {

class CfiTable;

class CodeLocator {
public:
    // The call-frame information of the object process `tgid` maps at `pc`, and `pc` in that
    // object's address space. False when no known file mapping holds `pc`.
    virtual bool locate(int tgid, uint64_t pc, CfiTable** table, uint64_t* obj_pc) = 0;

protected:
    ~CodeLocator() = default;
};

}  // namespace perfprof::unwind
