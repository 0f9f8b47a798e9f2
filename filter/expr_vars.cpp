// The variable table of the expression compiler (filter/expr_vars.h).
#include "filter/expr_vars.h"

namespace perfprof::filter {

using detail::Op;
using detail::Type;

namespace {

const char* type_name(uint8_t size) {
    switch (size) {
        case 1:
            return "char";
        case 2:
            return "short";
        case 4:
            return "int";
        default:
            return "long";
    }
}

}  // namespace

std::vector<VarInfo> make_vars(std::span<const Field> fields, const CompileOptions& opts) {
    std::vector<VarInfo> v;
    auto regs = [&](const char* name, uint32_t off, Type t) {
        VarInfo r{name, Op::Var, t, 1, off, 0, 0, false};
        v.push_back(r);
    };
    if (opts.key_only) {
        regs("key", 8, Type{8, true, 0});
        return v;
    }
    for (const Field& f : fields) {
        uint32_t elem = f.elem_size ? f.elem_size : f.size;
        bool sized = elem == 1 || elem == 2 || elem == 4 || elem == 8;
        if (f.is_dynamic) {
            // __data_loc: the two u16 halves as variables, and the data itself through the loc.
            v.push_back({f.name + "_offset", Op::Var, Type{2, true, 0}, 0, f.offset, f.offset + 2, 0, false});
            v.push_back(
                {f.name + "_len", Op::Var, Type{2, true, 0}, 0, f.offset + 2, f.offset + 4, 0, false});
            if (!sized) elem = 1;
            Type t{uint8_t(elem), f.is_string || !f.is_signed, 1};
            if (f.is_string) t = Type{1, false, 1};
            v.push_back({f.name, Op::DynAddr, t, 0, f.offset, f.offset + 4, 0, f.is_string});
            continue;
        }
        if (f.is_array || f.is_string || f.size != elem) {
            if (!sized) continue;
            Type t{uint8_t(elem), !f.is_signed, 1};
            if (f.is_string) t = Type{1, false, 1};
            v.push_back({f.name, Op::ArrayAddr, t, 0, f.offset, f.offset + f.size, f.size / elem, false});
            continue;
        }
        if (!sized) continue;  // odd-sized scalar: not representable, not exposed
        v.push_back({f.name, Op::Var, Type{uint8_t(f.size), !f.is_signed, 0}, 0, f.offset, f.offset + f.size,
                     0, false});
    }
    regs("_cpu", 0, Type{4, false, 0});
    regs("_pid", 4, Type{4, false, 0});
    regs("__cpu", 0, Type{4, false, 0});  // upstream's later spelling of the same two
    regs("__pid", 4, Type{4, false, 0});
    return v;
}

std::string var_decl(const VarInfo& v) {
    std::string s;
    Type t = v.type;
    bool arr = v.op == Op::ArrayAddr || (v.op == Op::DynAddr);
    if (arr) t.ptr--;  // an array is listed as its element type with [N]
    if (t.is_unsigned) s += "unsigned ";
    s += type_name(t.size);
    s += ' ';
    s.append(t.ptr, '*');
    s += v.name;
    if (v.op == Op::ArrayAddr) s += "[" + std::to_string(v.count) + "]";
    if (v.op == Op::DynAddr) s += "[]";
    return s;
}

}  // namespace perfprof::filter
