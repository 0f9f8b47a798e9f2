// One field of a tracepoint record, as its `format` file describes it: what EventSpec carries
// for user-space filters and expressions (filter/expr.h works on these).
#pragma once

#include <cstdint>
#include <string>

namespace perfprof {

struct Field {
    std::string name;
    uint32_t offset = 0, size = 0;
    bool is_signed = false;
    bool is_string = false;   // char[] or __data_loc char[]
    bool is_dynamic = false;  // __data_loc: a u32 at offset, low 16 bits offset, high 16 length
    uint32_t elem_size = 0;   // element size of arrays; 0 = same as size
    bool is_array = false;
};

}  // namespace perfprof
