// The symbol tables of an ELF read into one sorted-later array (SPEC §5.4.3): every
// SHT_SYMTAB and SHT_DYNSYM, and .gnu_debugdata (MiniDebugInfo) inside it.
#pragma once

#include <cstdint>
#include <vector>

#include "sym/elf_file.h"
#include "sym/file_block.h"
#include "sym/object.h"

namespace perfprof::sym {

struct SymbolEntry {
    Symbol sym;    // first: name() maps a Symbol* of this table back to its Entry
    uint32_t seq;  // load order: the first one wins for file_offset
    bool func;
};
using SymbolEntries = std::vector<SymbolEntry, PopulatedAllocator<SymbolEntry>>;

struct SymbolLoader {
    std::vector<Block>& pool;  // string tables, each NUL-terminated; names point into them
    SymbolEntries& syms;
    size_t symtab_syms = 0;  // of them from a .symtab (full table, not just the dynamic one)

    // Every SHT_SYMTAB/SHT_DYNSYM of `elf` (read from `fd` when there is one), and its
    // .gnu_debugdata; the number of symbols added. `file_size` bounds every section: header
    // fields are untrusted and must not size an allocation beyond what the file holds.
    size_t load(Elf* elf, int fd, uint64_t file_size, int depth);

private:
    void add(const Block& strs, uint64_t value, uint64_t size, uint32_t name, unsigned char info);
    void load_table(Elf* elf, int fd, Elf_Scn* scn, const GElf_Shdr& sh, Elf_Scn* strscn,
                    const GElf_Shdr& strsh);
};

}  // namespace perfprof::sym
