// An ELF file opened for reading (its fd or bytes owned with the Elf*), section lookup, and
// the compressed and linked debug data of an object (SPEC §5.4.3): the pieces lib/sym reads
// ELF with, shared by the object loader and the symbol-table loader.
#pragma once

#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "core/fd.h"

namespace perfprof::sym {

using ElfPtr = core::CPtr<Elf, elf_end>;

constexpr size_t kMaxDebugData = size_t(256) << 20;  // decompressed MiniDebugInfo cap
constexpr int kMaxDebugDataDepth = 2;                // .gnu_debugdata inside .gnu_debugdata

// An open ELF: the fd or the bytes it reads from must outlive the Elf*, hence one owner.
struct ElfFile {
    core::Fd fd;
    std::string image;  // for elf_memory; declared before `elf` so it is destroyed after it
    ElfPtr elf;
    uint64_t file_size = 0;

    explicit operator bool() const { return elf != nullptr; }
    Elf* get() const { return elf.get(); }

    // A regular file that is an ELF (else an empty ElfFile); `st_out` gets its stat.
    static ElfFile open(const std::string& path, struct stat* st_out = nullptr);
    // An ELF image in memory (else an empty ElfFile).
    static ElfFile memory(std::string bytes);
};

struct Section {
    Elf_Scn* scn = nullptr;
    GElf_Shdr sh{};
};

// The section named `name`, if any.
bool find_section(Elf* elf, const char* name, Section* out);

// .gnu_debugdata bytes decompressed (xz container, or a raw .lzma stream); empty on any failure.
std::string decompress(const unsigned char* in, size_t n);

// The .gnu_debuglink file name, or empty.
std::string debuglink(Elf* elf);

}  // namespace perfprof::sym
