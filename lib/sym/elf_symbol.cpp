#include "sym/elf_symbol.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <cerrno>
#include <optional>

#include "core/fd.h"
#include "perf-prof/error.h"

namespace perfprof::sym {

namespace {

using ElfPtr = core::CPtr<Elf, elf_end>;

[[noreturn]] void corrupt(const std::string& path, const char* what) {
    throw Error(path + ": " + what + ": " + elf_errmsg(-1));
}

// The file offset of the symbol's address, or nullopt when no bytes of the file hold it.
std::optional<uint64_t> vaddr_to_offset(Elf* elf, const GElf_Sym& sym) {
    size_t nphdr = 0;
    if (elf_getphdrnum(elf, &nphdr) == 0 && nphdr > 0) {
        for (size_t i = 0; i < nphdr; ++i) {
            GElf_Phdr ph;
            if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
            // p_filesz, not p_memsz: the .bss tail of a segment has no bytes in the file.
            if (sym.st_value >= ph.p_vaddr && sym.st_value - ph.p_vaddr < ph.p_filesz)
                return sym.st_value - ph.p_vaddr + ph.p_offset;
        }
        return std::nullopt;
    }
    // No program headers (a relocatable object): go through the symbol's own section.
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) return std::nullopt;
    Elf_Scn* scn = elf_getscn(elf, sym.st_shndx);
    GElf_Shdr sh;
    if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) return std::nullopt;
    if (sym.st_value < sh.sh_addr) return std::nullopt;
    return sym.st_value - sh.sh_addr + sh.sh_offset;
}

// The first defined function named `func` in the symbol tables of type `type`.
std::optional<uint64_t> search(Elf* elf, Elf64_Word type, std::string_view func) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != type) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data) continue;  // a table whose bytes lie outside the file: nothing to find there
        size_t entsize = sh.sh_entsize ? sh.sh_entsize : gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
        if (entsize == 0) continue;
        size_t count = data->d_size / entsize;
        for (size_t i = 0; i < count; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
            int t = GELF_ST_TYPE(sym.st_info);
            // IFUNCs (memcpy, strlen in libc) are code too: the probe lands on the resolver,
            // as with perf probe, rather than reporting a symbol the user can see as missing.
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF) continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!name || func != name) continue;
            if (auto off = vaddr_to_offset(elf, sym)) return off;
        }
    }
    return std::nullopt;
}

}  // namespace

uint64_t elf_symbol_file_offset(const std::string& path, std::string_view func) {
    static const bool elf_ready = elf_version(EV_CURRENT) != EV_NONE;
    if (!elf_ready) throw Error("libelf is out of date");

    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error::sys(errno, "cannot open " + path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) throw Error::sys(errno, "cannot stat " + path);
    if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");

    // ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under us then fails a read instead
    // of raising SIGBUS.
    ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
    if (!elf) corrupt(path, "not a readable ELF file");
    if (elf_kind(elf.get()) != ELF_K_ELF) throw Error(path + ": not an ELF file");
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf.get(), &eh)) corrupt(path, "bad ELF header");
    size_t nsec = 0;
    if (elf_getshdrnum(elf.get(), &nsec) != 0) corrupt(path, "bad section headers");

    if (auto off = search(elf.get(), SHT_SYMTAB, func)) return *off;
    if (auto off = search(elf.get(), SHT_DYNSYM, func)) return *off;
    return 0;
}

}  // namespace perfprof::sym
