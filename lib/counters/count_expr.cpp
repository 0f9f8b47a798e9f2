#include "counters/count_expr.h"

namespace perfprof::counters {

CountExpr::CountExpr(const std::string& text, const std::vector<std::string>& vars) {
    auto add = [&](const std::string& name, uint32_t slot) {
        for (const Field& f : fields_)
            if (f.name == name) return;
        Field f;
        f.name = name;
        f.offset = slot * 8;
        f.size = 8;
        fields_.push_back(f);
    };
    for (size_t i = 0; i < vars.size(); ++i) add(vars[i], uint32_t(i));
    add("period", uint32_t(vars.size()));
    record_.assign(vars.size() + 1, 0);
    program_ = std::make_unique<filter::Program>(filter::compile(text, fields_));
}

bool CountExpr::eval(const std::vector<uint64_t>& counts, uint64_t period) const {
    for (size_t i = 0; i + 1 < record_.size(); ++i) record_[i] = i < counts.size() ? counts[i] : 0;
    record_.back() = period;
    filter::EvalContext c;
    c.data = record_.data();
    c.size = uint32_t(record_.size() * 8);
    return program_->eval(c) != 0;
}

}  // namespace perfprof::counters
