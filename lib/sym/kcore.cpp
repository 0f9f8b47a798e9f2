// The /proc/kcore reader (sym/kcore.h).
#include "sym/kcore.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace perfprof::sym {

Kcore::Kcore(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    Elf64_Ehdr eh;
    bool good = ::pread(fd, &eh, sizeof eh, 0) == ssize_t(sizeof eh) && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
                eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_ident[EI_DATA] == ELFDATA2LSB && eh.e_type == ET_CORE &&
                eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 65535;
    for (unsigned i = 0; good && i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (::pread(fd, &ph, sizeof ph, off_t(eh.e_phoff + uint64_t(i) * sizeof ph)) != ssize_t(sizeof ph)) {
            good = false;
            break;
        }
        if (ph.p_type == PT_LOAD && ph.p_memsz) segs_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz});
    }
    if (!good) {
        ::close(fd);
        segs_.clear();
        return;
    }
    fd_ = fd;
}

Kcore::~Kcore() {
    if (fd_ >= 0) ::close(fd_);
}

size_t Kcore::read(uint64_t addr, void* buf, size_t len) const {
    if (fd_ < 0) return 0;
    for (const Segment& s : segs_) {
        if (addr < s.vaddr || addr - s.vaddr >= s.memsz) continue;
        uint64_t in = addr - s.vaddr;
        size_t n = size_t(std::min<uint64_t>(len, s.memsz - in));
        ssize_t got = ::pread(fd_, buf, n, off_t(s.offset + in));
        return got > 0 ? size_t(got) : 0;
    }
    return 0;
}

namespace {

std::string prefix(uint64_t addr) {
    char b[24];
    std::snprintf(b, sizeof b, "%016llx: ", (unsigned long long)addr);
    return b;
}

std::string not_kernel(uint64_t addr) {
    return prefix(addr) + "not a kernel virtual address\n";
}

void ascii(std::string& out, const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) out += p[i] >= 0x20 && p[i] < 0x7f ? char(p[i]) : '.';
}

}  // namespace

std::string kcore_dump(const Kcore& k, uint64_t addr, uint64_t count, unsigned size) {
    if (size != 1 && size != 2 && size != 4) size = 8;
    constexpr uint64_t kMaxBytes = 64ull << 20;  // a dump larger than this is a typo
    if (count == 0 || count > kMaxBytes / size) return not_kernel(addr);
    std::vector<uint8_t> buf(size_t(count * size));
    if (k.read(addr, buf.data(), buf.size()) != buf.size()) return not_kernel(addr);
    std::string out = prefix(addr);
    char hex[24];
    for (size_t off = 0; off < buf.size(); off += size) {
        uint64_t v = 0;
        std::memcpy(&v, &buf[off], size);
        std::snprintf(hex, sizeof hex, "%0*llx ", int(size * 2), (unsigned long long)v);
        out += hex;
        size_t end = off + size;
        if (end % 16 == 0 && end < buf.size()) {
            out += "  ";
            ascii(out, &buf[end - 16], 16);
            out += "\n" + prefix(addr + end);
        }
    }
    size_t t = buf.size() % 16 ? buf.size() % 16 : 16;
    out += "  " + std::string((16 - t) * 2 + (16 - t) / size, ' ');
    ascii(out, &buf[buf.size() - t], t);
    return out + "\n";
}

std::string kcore_string(const Kcore& k, uint64_t addr) {
    constexpr size_t kMax = 1 << 20;  // a string without NUL stops here
    std::string out = prefix(addr);
    size_t total = 0;
    uint8_t chunk[256];
    bool end = false;
    while (!end && total < kMax) {
        size_t n = k.read(addr + total, chunk, sizeof chunk);
        if (n == 0) break;
        for (size_t i = 0; i < n; ++i) {
            if (chunk[i] == 0) {
                end = true;
                break;
            }
            out += char(chunk[i]);
            if (chunk[i] == '\n') out += prefix(addr + total + i + 1);
        }
        total += n;
    }
    if (total == 0) return not_kernel(addr);
    return out + "\n";
}

uint64_t kallsyms_address(const std::string& name, const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "re");
    if (!f) return 0;
    char line[512];
    uint64_t found = 0;
    while (!found && std::fgets(line, sizeof line, f)) {
        unsigned long long a;
        char type;
        char sym[256];
        if (std::sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && name == sym) found = a;
    }
    std::fclose(f);
    return found;
}

}  // namespace perfprof::sym
