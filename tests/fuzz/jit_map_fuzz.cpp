// libFuzzer target for JIT map files (lib/sym/jit_map.h: parse_jit_map_line and the symbol
// table JitSymbols builds from them, later lines winning). Findings: a crash, a sanitizer
// report, a hang, a parsed line that does not read back the same when printed as perf's JITs
// write it, or a lookup that does not give the line just added at both ends of its range.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "sym/jit_map.h"

using perfprof::sym::JitMapLine;
using perfprof::sym::JitSymbols;

namespace {

void check(bool ok, const char* what) {
    if (!ok) fuzz::broken("jit_map_fuzz", what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    JitSymbols syms;
    for (size_t pos = 0; pos <= text.size();) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        JitMapLine l;
        if (perfprof::sym::parse_jit_map_line(text.substr(pos, nl - pos), l)) {
            check(l.size > 0 && l.start + l.size > l.start, "a range inside the address space");
            check(!l.name.empty() && l.name.front() != ' ' && l.name.front() != '\t',
                  "a name without a leading blank");
            char head[48];
            std::snprintf(head, sizeof head, "%" PRIx64 " %" PRIx64 " ", l.start, l.size);
            const std::string again = head + std::string(l.name);
            JitMapLine r;
            check(perfprof::sym::parse_jit_map_line(again, r) && r.start == l.start && r.size == l.size &&
                      r.name == l.name,
                  "a printed line reads back");
            syms.add(l);
            if (!syms.full()) {
                uint64_t start = 0, len = 0;
                for (uint64_t a : {l.start, l.start + l.size - 1, l.start + l.size / 2}) {
                    const std::string* n = syms.find(a, &start, &len);
                    check(n && *n == l.name && start == l.start && len == l.size, "the newest line wins");
                }
            }
        }
        pos = nl + 1;
    }
    syms.add_text(text);
    uint64_t s, n;
    (void)syms.find(0, &s, &n);
    (void)syms.find(~uint64_t(0), &s, &n);
    return 0;
}
