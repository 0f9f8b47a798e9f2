// libFuzzer target for `perf-prof --symbols` input processing (lib/sym/pprof_symbols.h, SPEC §6).
//
// The input is what a PPROF_PATH caller writes on stdin: a maps table, then address lines and
// symbol names. It goes through pprof_symbols() with a BINARY that does not exist (name lines
// then print nothing), so the output must hold exactly one line per address line, each `??` or
// a name without a newline in it. Crashes, sanitizer reports, hangs, exceptions and a broken
// invariant are findings. Maps paths name real files when the input says so (the dictionary
// offers libc and this fuzzer): that exercises the ELF layer too; FIFOs and devices are skipped
// by the service.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sym/pprof_symbols.h"
#include "sym/syms.h"

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// Address lines, counted independently of the service: after the maps table, the non-empty
// lines (trimmed) that start with 0x or 0X.
size_t address_lines(std::string_view in) {
    size_t pos = 0, n = 0;
    bool table = true;
    while (pos < in.size()) {
        size_t e = in.find('\n', pos);
        if (e == std::string_view::npos) e = in.size();
        std::string_view line = in.substr(pos, e - pos);
        pos = e + 1;
        if (table) {
            perfprof::sym::MapsLine m;
            if (perfprof::sym::parse_maps_line(line, m)) continue;
            table = false;
        }
        line = trim(line);
        if (line.size() >= 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X')) ++n;
    }
    return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string out = perfprof::sym::pprof_symbols(in, "/nonexistent/perf-prof-fuzz-binary");
    size_t lines = 0;
    for (char c : out) lines += c == '\n';
    if (!out.empty() && out.back() != '\n') std::abort();
    if (lines != address_lines(in)) std::abort();
    return 0;
}
