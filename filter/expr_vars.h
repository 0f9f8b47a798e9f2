// The names an expression can use (SPEC §2.7.3): a tracepoint's fields, the two halves of a
// __data_loc field, and _cpu/_pid (or only `key` for CompileOptions::key_only programs), each
// resolved to a load, the address of an array, or a __data_loc target. Part of the compiler
// (filter/expr.cpp); the list also makes the "Available variables:" block of an error.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "filter/expr.h"

namespace perfprof::filter {

// How an identifier resolves: a load (Var), the address of an array, or a __data_loc target.
struct VarInfo {
    std::string name;
    detail::Op op;      // Var, ArrayAddr, DynAddr
    detail::Type type;  // type of the expression the name denotes
    uint8_t space = 0;
    uint32_t offset = 0;
    uint32_t need = 0;   // record bytes needed to read it
    uint32_t count = 0;  // array element count for the listing (0 = not an array)
    bool dyn_string = false;
};

std::vector<VarInfo> make_vars(std::span<const Field> fields, const CompileOptions& opts);

// The C declaration a variable is listed with: "unsigned short *name", "char comm[16]".
std::string var_decl(const VarInfo& v);

// A char * (what strings, '~' and the string functions take).
inline bool is_cstr(const detail::Type& t) {
    return t.ptr == 1 && t.size == 1;
}

}  // namespace perfprof::filter
