// Symbol → file offset in an ELF file (SPEC §5.4.4), the offset a uprobe is placed at.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace perfprof::sym {

// The file offset of the first defined function symbol whose raw (mangled) name is `func`,
// searching .symtab first, then .dynsym. The symbol's virtual address is mapped to the file
// through the PT_LOAD segment that contains it (for objects without program headers, through
// its section), which is SPEC's `value − (.text addr − .text offset)` whenever the symbol lies
// in the segment of .text. Returns 0 when there is no such symbol. Throws Error naming `path`
// when the file cannot be opened or is not a readable ELF file.
uint64_t elf_symbol_file_offset(const std::string& path, std::string_view func);

}  // namespace perfprof::sym
