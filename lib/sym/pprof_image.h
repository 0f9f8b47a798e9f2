// What `pprof --symbols` knows about one mapped file (SPEC §6): its view through `nm -n` and
// `addr2line -f`, reproduced from the ELF symbol tables and DWARF without running either.
// See pprof_symbols.cpp for how pprof combines the two answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace perfprof::sym {

class DwarfNames;
class SymTable;
struct SymbolsRun;
class NmTable;
struct NmRoutine;
struct SymTableSym;

class PprofImage {
public:
    // Opens the file (or its copy under the debug root) and finds its DWARF; reads the symbol
    // tables' headers, names and addresses, but sorts nothing yet.
    PprofImage(const std::string& path, const std::string& build_id, const SymbolsRun& run);
    ~PprofImage();
    PprofImage(const PprofImage&) = delete;
    PprofImage& operator=(const PprofImage&) = delete;

    // The two lookup tables, to be built before name(). Independent: each may run on a thread
    // of its own.
    void build_nm();
    void build_index();

    // Whether name() may be called from several threads at once (not when it reads DWARF:
    // libdw is not thread-safe).
    bool shared() const;

    // One caller's position in the tables and its last answer: lookups in ascending address
    // order (the usual case) step forward from there, and the next address often lies in the
    // same function.
    struct Cursor {
        size_t nm = 0;
        uint16_t sec = 0;
        size_t fn = 0;
        size_t last_run = SIZE_MAX;
        uint32_t last_sym = 0;
        std::string last;
    };

    // The name `pprof --symbols` prints for `addr` (link-time address; `pc` as mapped).
    std::string name(uint64_t addr, uint64_t pc, Cursor& cur);

private:
    std::string name_of_symbol(const NmRoutine* r, const SymTableSym* s, uint64_t pc) const;
    std::string combine(const std::string& a2l, const NmRoutine* r, uint64_t pc) const;

    std::string image_;
    std::unique_ptr<SymTable> own_, debug_syms_;
    std::unique_ptr<NmTable> nm_;
    std::unique_ptr<DwarfNames> dwarf_;
};

}  // namespace perfprof::sym
