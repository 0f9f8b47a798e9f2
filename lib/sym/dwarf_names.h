// Function names from DWARF (libdw) for `perf-prof --symbols` (SPEC §6): what `addr2line -f`
// reads from .debug_info, i.e. the innermost inlined function at an address and the function
// that contains it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace perfprof::sym {

struct DwarfFunction {
    std::string name;      // DW_AT_linkage_name (mangled) if any, else DW_AT_name; may be empty
    bool linkage = false;  // `name` is a linkage name
    uint64_t entry = 0;    // start of the first address range of this instance
};

class DwarfNames {
public:
    // The DWARF of the ELF file `path`; nullptr when it has no .debug_info or cannot be read.
    // `found` runs once .debug_info is known to be there, before libdw reads it.
    static std::unique_ptr<DwarfNames> open(const std::string& path, const std::function<void()>& found = {});
    ~DwarfNames();
    DwarfNames(const DwarfNames&) = delete;
    DwarfNames& operator=(const DwarfNames&) = delete;

    // The innermost subprogram/inlined-subroutine scope containing `addr` (link-time address)
    // and the outermost one (the out-of-line function). False when no DWARF function covers it.
    bool lookup(uint64_t addr, DwarfFunction* inner, DwarfFunction* outer);
    // The source line of `addr` (link-time address) in the out-of-line function that holds it,
    // and that line's file: the line table's row for addr or, inside inlined code, the call
    // site of the outermost inlined call (the line a profile that names only out-of-line
    // functions attributes addr to). False when no line (or line 0) is known.
    bool source_line(uint64_t addr, std::string* file, int* line);
    // NT_GNU_BUILD_ID of the file the DWARF was read from, lowercase hex; empty if none.
    std::string build_id() const;

private:
    DwarfNames() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class Object;
// The DWARF of an object: its own file, else the separate debug file by build-id under the
// debug root; a file with a different build-id than the object's is not used. nullptr if none.
std::unique_ptr<DwarfNames> open_dwarf_of(const Object& obj);

// True if the ELF file at `path` has a .debug_info section with contents (not SHT_NOBITS).
bool has_debug_info(const std::string& path);

}  // namespace perfprof::sym
