// breakpoint's positional words (SPEC-PROFILERS §P12): ADDR[/LEN][:TYPE], 1 to 4 of them.
//   ADDR  decimal starting with 1-9, or 0x/0X hex
//   LEN   1, 2, 4 or 8 (default 1)
//   TYPE  any of r, w, x (default w); r implies w (x86 has no read-only breakpoints);
//         x is an execute breakpoint only, of sizeof(long) bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfprof::hw {

inline constexpr size_t kMaxBreakpoints = 4;  // x86's debug registers DR0-DR3

struct Breakpoint {
    uint64_t addr = 0;
    uint32_t len = 1;   // bp_len
    uint32_t type = 2;  // bp_type: HW_BREAKPOINT_R 1 | W 2 | X 4
};

// One word; throws Error::usage with SPEC's texts (" <addr> is not decimal or hexadecimal.",
// " <addr> parsing error.") after the word.
Breakpoint parse_breakpoint(std::string_view word);
// Every word; no word or more than 4 is a usage error (" <addr> needs to be specified.",
// " Up to 4 breakpoints are supported.").
std::vector<Breakpoint> parse_breakpoints(const std::vector<std::string>& words);

// "R", "W", "X" letters of `type`, in that order ("RW", "W", "X").
std::string type_letters(uint32_t type);

}  // namespace perfprof::hw
