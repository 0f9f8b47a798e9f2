#include "hw/breakpoint_addr.h"

#include <linux/hw_breakpoint.h>

#include "perf-prof/error.h"

namespace perfprof::hw {

namespace {

[[noreturn]] void bad(std::string_view word, const char* what) {
    throw Error::usage("breakpoint: '" + std::string(word) + "':" + what);
}

int digit(char c, int base) {
    if (c >= '0' && c <= '9') return c - '0';
    if (base == 16 && c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Breakpoint parse_breakpoint(std::string_view word) {
    Breakpoint bp;
    std::string_view s = word;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digit(s[2], 16) >= 0) {
        base = 16;
        s.remove_prefix(2);
    } else if (s.empty() || s[0] < '1' || s[0] > '9') {
        bad(word, " <addr> is not decimal or hexadecimal.");
    }
    uint64_t addr = 0;
    while (!s.empty() && digit(s[0], base) >= 0) {
        const auto d = uint64_t(digit(s[0], base));
        if (addr > (UINT64_MAX - d) / uint64_t(base)) bad(word, " <addr> parsing error.");
        addr = addr * uint64_t(base) + d;
        s.remove_prefix(1);
    }
    bp.addr = addr;
    if (!s.empty() && s[0] == '/') {
        if (s.size() < 2 || (s[1] != '1' && s[1] != '2' && s[1] != '4' && s[1] != '8'))
            bad(word, " <addr> parsing error: the length is 1, 2, 4 or 8.");
        bp.len = uint32_t(s[1] - '0');
        s.remove_prefix(2);
    }
    if (!s.empty() && s[0] == ':') {
        s.remove_prefix(1);
        if (s.empty()) bad(word, " <addr> parsing error: a type is r, w or x.");
        uint32_t type = 0;
        while (!s.empty() && (s[0] == 'r' || s[0] == 'w' || s[0] == 'x')) {
            type |= s[0] == 'r' ? HW_BREAKPOINT_R : s[0] == 'w' ? HW_BREAKPOINT_W : HW_BREAKPOINT_X;
            s.remove_prefix(1);
        }
        bp.type = type;
    }
    if (!s.empty()) bad(word, " <addr> parsing error.");
    if (bp.type & HW_BREAKPOINT_X) {
        bp.type = HW_BREAKPOINT_X;
        bp.len = sizeof(long);
    } else if (bp.type & HW_BREAKPOINT_R) {
        bp.type |= HW_BREAKPOINT_W;
    }
    return bp;
}

std::vector<Breakpoint> parse_breakpoints(const std::vector<std::string>& words) {
    if (words.empty()) throw Error::usage("breakpoint: <addr> needs to be specified.");
    if (words.size() > kMaxBreakpoints) throw Error::usage("breakpoint: Up to 4 breakpoints are supported.");
    std::vector<Breakpoint> bps;
    bps.reserve(words.size());
    for (const std::string& w : words) bps.push_back(parse_breakpoint(w));
    return bps;
}

std::string type_letters(uint32_t type) {
    std::string s;
    if (type & HW_BREAKPOINT_R) s += 'R';
    if (type & HW_BREAKPOINT_W) s += 'W';
    if (type & HW_BREAKPOINT_X) s += 'X';
    return s;
}

}  // namespace perfprof::hw
