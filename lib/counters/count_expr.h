// hrtimer's expression over counts (SPEC-PROFILERS §P15): compiled by filter/ with one
// unsigned 64-bit variable per event (alias or name without sys:) and `period`, evaluated
// over a record made of those values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "filter/expr.h"

namespace perfprof::counters {

class CountExpr {
public:
    // Throws filter::CompileError (usage) on a bad expression; a name given twice keeps its first.
    CountExpr(const std::string& text, const std::vector<std::string>& vars);
    // `counts`: one per variable, in `vars` order.
    bool eval(const std::vector<uint64_t>& counts, uint64_t period) const;
    const std::string& source() const { return program_->source(); }

private:
    std::vector<Field> fields_;
    std::unique_ptr<filter::Program> program_;
    mutable std::vector<uint64_t> record_;
};

}  // namespace perfprof::counters
