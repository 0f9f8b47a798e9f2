// Symbol tables into memory: see symbol_loader.h.
#include "sym/symbol_loader.h"

#include <cstring>

namespace perfprof::sym {

namespace {

bool is_func(unsigned char info) {
    int t = GELF_ST_TYPE(info);
    return t == STT_FUNC || t == STT_GNU_IFUNC;
}

bool native_elf64(Elf* elf) {
    const char* id = elf_getident(elf, nullptr);
    if (!id || id[EI_CLASS] != ELFCLASS64) return false;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return id[EI_DATA] == ELFDATA2LSB;
#else
    return id[EI_DATA] == ELFDATA2MSB;
#endif
}

}  // namespace

// Every SHT_SYMTAB/SHT_DYNSYM of `elf` (read from `fd` when there is one), and its
// .gnu_debugdata; the number of symbols added. `file_size` bounds every section: header
// fields are untrusted and must not size an allocation beyond what the file holds.
size_t SymbolLoader::load(Elf* elf, int fd, uint64_t file_size, int depth) {
    size_t before = syms.size();
    auto fits = [file_size](const GElf_Shdr& sh) {
        return sh.sh_offset <= file_size && sh.sh_size <= file_size - sh.sh_offset;
    };
    size_t want = 0;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
            sh.sh_entsize >= sizeof(Elf32_Sym) && fits(sh))
            want += sh.sh_size / sh.sh_entsize;
    }
    syms.reserve(syms.size() + want);
    // .symtab before .dynsym (their order among the sections varies): file_offset() takes
    // the first match, as uprobe users expect from `nm`.
    for (Elf64_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !fits(sh)) continue;
            Elf_Scn* strscn = elf_getscn(elf, sh.sh_link);
            GElf_Shdr strsh;
            if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
                strsh.sh_size == 0 || !fits(strsh))
                continue;
            const size_t before_table = syms.size();
            load_table(elf, fd, scn, sh, strscn, strsh);
            if (type == SHT_SYMTAB) symtab_syms += syms.size() - before_table;
        }
    }
    if (depth < kMaxDebugDataDepth) {
        Section dd;
        if (find_section(elf, ".gnu_debugdata", &dd) && dd.sh.sh_type != SHT_NOBITS) {
            Elf_Data* d = elf_rawdata(dd.scn, nullptr);
            if (d && d->d_buf && d->d_size) {
                ElfFile mini =
                    ElfFile::memory(decompress(static_cast<const unsigned char*>(d->d_buf), d->d_size));
                if (mini) load(mini.get(), -1, mini.image.size(), depth + 1);
            }
        }
    }
    return syms.size() - before;
}

void SymbolLoader::add(const Block& strs, uint64_t value, uint64_t size, uint32_t name, unsigned char info) {
    // strs holds the table plus a NUL of ours, so every in-range name is a C string.
    if (value == 0 || name == 0 || name >= strs.size() - 1 || strs.data()[name] == '\0') return;
    syms.push_back({{value, size, strs.data() + name}, static_cast<uint32_t>(syms.size()), is_func(info)});
}

void SymbolLoader::load_table(Elf* elf, int fd, Elf_Scn* scn, const GElf_Shdr& sh, Elf_Scn* strscn,
                              const GElf_Shdr& strsh) {
    // Fast path for the common case: read both tables straight from the file, no copies.
    if (fd >= 0 && native_elf64(elf) && !((sh.sh_flags | strsh.sh_flags) & SHF_COMPRESSED) &&
        sh.sh_entsize == sizeof(Elf64_Sym) && strsh.sh_type != SHT_NOBITS) {
        Block strs = pread_block(fd, strsh.sh_offset, strsh.sh_size, UINT64_MAX);  // sizes checked by fits()
        Block tab = pread_block(fd, sh.sh_offset, sh.sh_size, UINT64_MAX);
        if (!strs.data() || !tab.data()) return;
        const auto* s = reinterpret_cast<const Elf64_Sym*>(tab.data());
        size_t n = sh.sh_size / sizeof(Elf64_Sym);
        for (size_t i = 1; i < n; ++i) add(strs, s[i].st_value, s[i].st_size, s[i].st_name, s[i].st_info);
        pool.push_back(std::move(strs));
        return;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf || data->d_type != ELF_T_SYM) return;
    Elf_Data* str = elf_getdata(strscn, nullptr);
    if (!str || !str->d_buf || str->d_size == 0) return;
    Block strs(str->d_size + 1);
    std::memcpy(strs.data(), str->d_buf, str->d_size);
    strs.data()[str->d_size] = '\0';
    size_t n = data->d_size / gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    for (size_t i = 1; i < n; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        add(strs, sym.st_value, sym.st_size, sym.st_name, sym.st_info);
    }
    pool.push_back(std::move(strs));
}

}  // namespace perfprof::sym
