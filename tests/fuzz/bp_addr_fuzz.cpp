// libFuzzer target for breakpoint's address words (lib/hw/breakpoint_addr.h, SPEC-PROFILERS
// §P12): ADDR[/LEN][:TYPE]. Findings: a crash, a sanitizer report, a hang, an exception other
// than the usage error, a breakpoint the kernel could not take (a length not 1, 2, 4 or 8, a type
// not W, RW or X, an execute breakpoint not of sizeof(long) bytes), or an accepted word whose
// breakpoint, written back as ADDR/LEN:type, parses to another breakpoint.
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "hw/breakpoint_addr.h"
#include "perf-prof/error.h"

using perfprof::hw::Breakpoint;

namespace {

void check(bool ok, const char* what) {
    if (!ok) fuzz::broken("bp_addr_fuzz", what);
}

std::string lower(std::string s) {
    for (char& c : s) c = char(c - 'A' + 'a');
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view word(reinterpret_cast<const char*>(data), size);
    Breakpoint bp;
    try {
        bp = perfprof::hw::parse_breakpoint(word);
    } catch (const perfprof::Error& e) {
        check(e.kind() == perfprof::Error::Kind::Usage, "a bad word is not a usage error");
        return 0;
    }
    check(bp.len == 1 || bp.len == 2 || bp.len == 4 || bp.len == 8, "length not 1, 2, 4 or 8");
    check(bp.type == 2 || bp.type == 3 || bp.type == 4, "type not W, RW or X");
    check(bp.type != 4 || bp.len == sizeof(long), "execute breakpoint not of sizeof(long) bytes");
    check(!word.empty() && word[0] != '0' ? true : word.size() > 2, "accepted a word without an address");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%#" PRIx64 "/%u:", bp.addr, bp.len);
    const std::string again = buf + lower(perfprof::hw::type_letters(bp.type));
    Breakpoint back;
    try {
        back = perfprof::hw::parse_breakpoint(again);
    } catch (const perfprof::Error&) {
        check(bp.addr == 0, "its own text refused");  // 0 is printed as "0": not an address
        return 0;
    }
    check(back.addr == bp.addr && back.len == bp.len && back.type == bp.type, "written back, parsed otherwise");
    return 0;
}
