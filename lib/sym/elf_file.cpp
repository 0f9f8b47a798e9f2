// ELF reading shared by lib/sym: see elf_file.h.
#include "sym/elf_file.h"

#include <fcntl.h>
#include <lzma.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "sym/object.h"

namespace perfprof::sym {

namespace {

bool elf_ready() {
    static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
    return ok;
}

std::string hex(const unsigned char* p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

}  // namespace

ElfFile ElfFile::open(const std::string& path, struct stat* st_out) {
    ElfFile f;
    if (!elf_ready()) return f;
    f.fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!f.fd) return f;
    struct stat st;
    if (::fstat(f.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
    if (st_out) *st_out = st;
    f.file_size = static_cast<uint64_t>(st.st_size);
    // ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under us then fails a read
    // instead of raising SIGBUS.
    f.elf.reset(elf_begin(f.fd.get(), ELF_C_READ, nullptr));
    if (f.elf && elf_kind(f.elf.get()) != ELF_K_ELF) f.elf.reset();
    return f;
}

ElfFile ElfFile::memory(std::string bytes) {
    ElfFile f;
    if (!elf_ready() || bytes.empty()) return f;
    f.image = std::move(bytes);
    f.elf.reset(elf_memory(f.image.data(), f.image.size()));
    if (f.elf && elf_kind(f.elf.get()) != ELF_K_ELF) f.elf.reset();
    return f;
}

// The section named `name`, if any.
bool find_section(Elf* elf, const char* name, Section* out) {
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
        if (n && std::strcmp(n, name) == 0) {
            *out = {scn, sh};
            return true;
        }
    }
    return false;
}

std::string read_build_id(Elf* elf) {
    auto scan = [](Elf_Data* data) -> std::string {
        if (!data || !data->d_buf) return {};
        size_t off = 0;
        GElf_Nhdr nh;
        size_t name_off = 0, desc_off = 0;
        while (off < data->d_size) {
            size_t next = gelf_getnote(data, off, &nh, &name_off, &desc_off);
            if (next == 0 || next <= off) break;
            const char* base = static_cast<const char*>(data->d_buf);
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                std::memcmp(base + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
                desc_off + nh.n_descsz <= data->d_size)
                return hex(reinterpret_cast<const unsigned char*>(base + desc_off), nh.n_descsz);
            off = next;
        }
        return {};
    };
    bool any_section = false;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        any_section = true;
        if (sh.sh_type != SHT_NOTE) continue;
        if (std::string id = scan(elf_getdata(scn, nullptr)); !id.empty()) return id;
    }
    if (any_section) return {};
    size_t nphdr = 0;
    if (elf_getphdrnum(elf, &nphdr) != 0) return {};
    for (size_t i = 0; i < nphdr; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
        Elf_Data* d = elf_getdata_rawchunk(elf, static_cast<int64_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
        if (std::string id = scan(d); !id.empty()) return id;
    }
    return {};
}

// .gnu_debugdata bytes decompressed (xz container, or a raw .lzma stream); empty on any failure.
std::string decompress(const unsigned char* in, size_t n) {
    static const unsigned char xz_magic[] = {0xFD, '7', 'z', 'X', 'Z', 0x00};
    bool xz = n >= 6 && std::memcmp(in, xz_magic, 6) == 0;
    bool raw_lzma = n >= 2 && in[0] == 0x5D && in[1] == 0x00;
    if (!xz && !raw_lzma) return {};
    lzma_stream strm = LZMA_STREAM_INIT;
    lzma_ret r = xz ? lzma_stream_decoder(&strm, kMaxDebugData, 0) : lzma_alone_decoder(&strm, kMaxDebugData);
    if (r != LZMA_OK) return {};
    struct End {
        lzma_stream* s;
        ~End() { lzma_end(s); }
    } end{&strm};
    std::string out;
    size_t cap = std::min(kMaxDebugData, std::max<size_t>(n * 4, 64 << 10));
    out.resize(cap);
    strm.next_in = in;
    strm.avail_in = n;
    strm.next_out = reinterpret_cast<uint8_t*>(out.data());
    strm.avail_out = out.size();
    for (;;) {
        r = lzma_code(&strm, LZMA_FINISH);
        if (r == LZMA_STREAM_END) break;
        if (r != LZMA_OK && r != LZMA_BUF_ERROR) return {};
        if (strm.avail_out == 0) {
            if (out.size() >= kMaxDebugData) return {};
            size_t used = out.size();
            out.resize(std::min(kMaxDebugData, used * 2));
            strm.next_out = reinterpret_cast<uint8_t*>(out.data()) + used;
            strm.avail_out = out.size() - used;
        } else if (r == LZMA_BUF_ERROR) {
            return {};  // input ended before the stream did (truncated)
        }
    }
    out.resize(strm.total_out);
    return out;
}

// The .gnu_debuglink file name, or empty.
std::string debuglink(Elf* elf) {
    Section s;
    if (!find_section(elf, ".gnu_debuglink", &s) || s.sh.sh_type == SHT_NOBITS) return {};
    Elf_Data* d = elf_rawdata(s.scn, nullptr);
    if (!d || !d->d_buf || d->d_size == 0) return {};
    const char* p = static_cast<const char*>(d->d_buf);
    size_t len = strnlen(p, d->d_size);
    if (len == 0 || len == d->d_size) return {};
    std::string name(p, len);
    if (name.find('/') != std::string::npos) return {};
    return name;
}

}  // namespace perfprof::sym
