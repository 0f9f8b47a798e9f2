// `perf-prof --symbols BINARY` (SPEC §6): the gperftools PPROF_PATH symbolizer protocol.
#pragma once

#include <string>
#include <string_view>

#include "sym/object.h"

namespace perfprof::sym {

// How a --symbols exchange runs.
struct SymbolsRun {
    std::string debug_root = kDefaultDebugRoot;  // separate debug files (§5.4.3)
    // The process ends after this one batch (tune_heap_for_batch() was called): memory is made
    // resident ahead (prefault_heap) and big structures are left to the kernel to free.
    bool batch = false;
};

// The whole exchange as a pure function: `input` is everything the caller wrote on stdin (a
// /proc/PID/maps table, then one `0x<hex>` address or one symbol name per line), the result
// is what goes to stdout. One output line per address line, in input order: the demangled
// function name (pprof's; where pprof has none, the object layer's), or `??`. A line that starts with 0x/0X
// but is not a valid 64-bit hex number is still an address line (answered `??`) so that the caller's
// positional pairing holds. Other non-empty lines are symbol names looked up in `binary`: `0x<file offset>`
// when found, nothing otherwise. `binary` is opened only if such a line exists. Never throws.
std::string pprof_symbols(std::string_view input, const std::string& binary, const SymbolsRun& run = {});

// pprof's ShortFunctionName: the demangled name without argument lists (and `const`), a
// trailing `<hexaddress>`, template arguments and a leading return type, which is what
// `pprof --symbols` prints ("std::vector<int>::push_back(int const&)" → "std::vector::push_back").
std::string pprof_short_name(std::string demangled);

class Symbolizer;

// serve's /pprof/symbol (pprof's remote symbol protocol): `body` holds addresses, `0x` and hex,
// separated by '+' (what pprof posts) or white space. The answer has one `0xADDR<TAB>NAME` line
// per address that names a function of process `pid` through `symbols` (addresses of the upper
// half from kallsyms), in order; an address without a name has no line, and pprof shows it as
// an address. Names are demangled, whole. Never throws.
std::string symbol_page(Symbolizer& symbols, int pid, std::string_view body);

// Reads all of stdin, answers on stdout (flushed), returns the exit status (0).
int run_pprof_symbols(const std::string& binary);

}  // namespace perfprof::sym
