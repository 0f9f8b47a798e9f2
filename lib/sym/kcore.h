// Kernel virtual memory through /proc/kcore (SPEC-PROFILERS §P17): an ELF core file whose
// PT_LOAD segments map [p_vaddr, p_vaddr + p_memsz) to file offset p_offset; a read is a pread
// at addr - p_vaddr + p_offset. Also the kallsyms lookup of a symbol's address by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace perfprof::sym {

class Kcore {
public:
    // Opens and indexes `path` (default /proc/kcore). ok() is false when it cannot be opened or
    // is no 64-bit little-endian ELF core file; every read then fails.
    explicit Kcore(const std::string& path = "/proc/kcore");
    ~Kcore();
    Kcore(const Kcore&) = delete;
    Kcore& operator=(const Kcore&) = delete;

    bool ok() const { return fd_ >= 0; }
    // Reads `len` bytes at kernel address `addr`; the count read, which is short where the
    // range leaves its segment or the file (0: not a kernel virtual address).
    size_t read(uint64_t addr, void* buf, size_t len) const;

    struct Segment {
        uint64_t vaddr, memsz, offset, filesz;
    };
    const std::vector<Segment>& segments() const { return segs_; }

private:
    int fd_ = -1;
    std::vector<Segment> segs_;
};

// SPEC §P17's hex dump of `count` elements of `size` bytes (1, 2, 4, 8) at `addr`: 16 bytes a
// line with their ASCII; "{addr:x16}: not a kernel virtual address" when any byte is unreadable.
std::string kcore_dump(const Kcore& k, uint64_t addr, uint64_t count, unsigned size);
// SPEC §P17's --string: the bytes up to the first NUL, a new address prefix after each newline.
std::string kcore_string(const Kcore& k, uint64_t addr);

// The address of `name` in a kallsyms file (any symbol type, first match); 0 when absent.
uint64_t kallsyms_address(const std::string& name, const std::string& path = "/proc/kallsyms");

}  // namespace perfprof::sym
