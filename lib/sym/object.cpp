// One ELF object's symbols (SPEC §5.4): header facts at open, the symbol table on first use.
//
// Loading is kept lean because `--symbols` on a 100 MB library must finish in a few ms: only the
// section headers, the symbol tables and their string tables are read (never DWARF), with pread
// straight into their final buffers; each string table is kept whole as one block of the string
// pool and symbols point into it (no per-symbol allocation); the table is sorted once; names are
// demangled on first display.
//
// Sources (§5.4.3): <debug root>/.build-id/XX/YYYY.debug instead of the binary when it yields
// symbols; else the binary (every SHT_SYMTAB and SHT_DYNSYM, plus .gnu_debugdata, decompressed
// with a 256 MiB cap); if that yields nothing, the .gnu_debuglink file next to the binary, in its
// .debug/ folder or under the debug root. A debug file is rejected when its build-id differs
// from the binary's (used instead of the debuglink CRC, which would mean reading the whole file).
//
// Thread safety: loading is guarded by a once_flag and demangled names by a mutex, so one Object
// may be shared between threads.
//
// Duplicates (same start): the table keeps one entry per (start, name); among entries with the
// same start, find() returns the preferred one: a function (FUNC/IFUNC) over other types, then
// the larger size, then the one met first (.symtab before .dynsym, then MiniDebugInfo).
#include "sym/object.h"

#include "sym/file_block.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/fd.h"
#include "unwind/cfi_table.h"

namespace perfprof::sym {

namespace {

using ElfPtr = core::CPtr<Elf, elf_end>;

constexpr size_t kMaxDebugData = size_t(256) << 20;  // decompressed MiniDebugInfo cap
constexpr int kMaxDebugDataDepth = 2;                // .gnu_debugdata inside .gnu_debugdata

bool elf_ready() {
    static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
    return ok;
}

std::mutex g_root_mu;
std::string g_debug_root = "/usr/lib/debug";

std::string debug_root() {
    std::lock_guard lk(g_root_mu);
    return g_debug_root;
}

// An open ELF: the fd or the bytes it reads from must outlive the Elf*, hence one owner.
struct ElfFile {
    core::Fd fd;
    std::string image;  // for elf_memory; declared before `elf` so it is destroyed after it
    ElfPtr elf;
    uint64_t file_size = 0;

    explicit operator bool() const { return elf != nullptr; }
    Elf* get() const { return elf.get(); }

    static ElfFile open(const std::string& path, struct stat* st_out = nullptr) {
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
    static ElfFile memory(std::string bytes) {
        ElfFile f;
        if (!elf_ready() || bytes.empty()) return f;
        f.image = std::move(bytes);
        f.elf.reset(elf_memory(f.image.data(), f.image.size()));
        if (f.elf && elf_kind(f.elf.get()) != ELF_K_ELF) f.elf.reset();
        return f;
    }
};

struct Section {
    Elf_Scn* scn = nullptr;
    GElf_Shdr sh{};
};

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

namespace {

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

bool is_func(unsigned char info) {
    int t = GELF_ST_TYPE(info);
    return t == STT_FUNC || t == STT_GNU_IFUNC;
}

struct Entry {
    Symbol sym;    // first: name() maps a Symbol* of this table back to its Entry
    uint32_t seq;  // load order: the first one wins for file_offset
    bool func;
};
using Entries = std::vector<Entry, PopulatedAllocator<Entry>>;

bool native_elf64(Elf* elf) {
    const char* id = elf_getident(elf, nullptr);
    if (!id || id[EI_CLASS] != ELFCLASS64) return false;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return id[EI_DATA] == ELFDATA2LSB;
#else
    return id[EI_DATA] == ELFDATA2MSB;
#endif
}

struct Loader {
    std::vector<Block>& pool;  // string tables, each NUL-terminated; names point into them
    Entries& syms;

    // Every SHT_SYMTAB/SHT_DYNSYM of `elf` (read from `fd` when there is one), and its
    // .gnu_debugdata; the number of symbols added. `file_size` bounds every section: header
    // fields are untrusted and must not size an allocation beyond what the file holds.
    size_t load(Elf* elf, int fd, uint64_t file_size, int depth) {
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
                load_table(elf, fd, scn, sh, strscn, strsh);
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

    void add(const Block& strs, uint64_t value, uint64_t size, uint32_t name, unsigned char info) {
        // strs holds the table plus a NUL of ours, so every in-range name is a C string.
        if (value == 0 || name == 0 || name >= strs.size() - 1 || strs.data()[name] == '\0') return;
        syms.push_back(
            {{value, size, strs.data() + name}, static_cast<uint32_t>(syms.size()), is_func(info)});
    }

    void load_table(Elf* elf, int fd, Elf_Scn* scn, const GElf_Shdr& sh, Elf_Scn* strscn,
                    const GElf_Shdr& strsh) {
        // Fast path for the common case: read both tables straight from the file, no copies.
        if (fd >= 0 && native_elf64(elf) && !((sh.sh_flags | strsh.sh_flags) & SHF_COMPRESSED) &&
            sh.sh_entsize == sizeof(Elf64_Sym) && strsh.sh_type != SHT_NOBITS) {
            Block strs =
                pread_block(fd, strsh.sh_offset, strsh.sh_size, UINT64_MAX);  // sizes checked by fits()
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
};

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

class ElfObject final : public Object {
public:
    ElfObject(std::string path, std::string open_path) : open_path_(std::move(open_path)) {
        path_ = std::move(path);
        ElfFile f = ElfFile::open(open_path_, &st_);
        if (f) read_header(f.get());
    }
    ElfObject(std::string name, std::string image, bool) {
        path_ = std::move(name);
        image_ = ElfFile::memory(std::move(image));
        if (image_) read_header(image_.get());
        if (type_ == ObjectType::Unknown) image_ = {};
    }

    std::string key() const {
        if (type_ == ObjectType::Unknown) return {};
        if (!build_id_.empty()) return "b:" + build_id_;
        if (!image_ && st_.st_ino)
            return "i:" + std::to_string(st_.st_dev) + ":" + std::to_string(st_.st_ino) + ":" +
                   std::to_string(st_.st_mtim.tv_sec) + "." + std::to_string(st_.st_mtim.tv_nsec);
        return "p:" + path_;
    }

    const Symbol* find(uint64_t addr) override {
        load();
        // First entry with start > addr, then back to the first of the run with the greatest
        // start <= addr (the preferred duplicate).
        auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                                   [](uint64_t a, const Entry& e) { return a < e.sym.start; });
        if (it == syms_.begin()) return nullptr;
        --it;
        uint64_t start = it->sym.start;
        while (it != syms_.begin() && std::prev(it)->sym.start == start) --it;
        const Symbol& s = it->sym;
        if (addr - s.start < s.size || addr == s.start) return &s;
        return nullptr;
    }

    const std::string& name(const Symbol& s) override {
        std::lock_guard lk(names_mu_);
        // A symbol of this table: its slot by index (no hashing); any other: by address.
        auto* e = reinterpret_cast<const Entry*>(&s);
        if (!syms_.empty() && std::less_equal<>()(syms_.data(), e) &&
            std::less<>()(e, syms_.data() + syms_.size())) {
            if (name_slot_.empty()) name_slot_.resize(syms_.size());
            uint32_t& slot = name_slot_[static_cast<size_t>(e - syms_.data())];
            if (slot == 0) {
                names_.push_back(demangle(s.name));
                slot = static_cast<uint32_t>(names_.size());
            }
            return names_[slot - 1];
        }
        auto [it, fresh] = foreign_.try_emplace(&s);
        if (fresh) it->second = demangle(s.name ? s.name : "");
        return it->second;
    }

    uint64_t file_offset(std::string_view raw) override {
        load();
        if (raw.empty() || type_ == ObjectType::Unknown) return 0;
        const Entry* best = nullptr;
        for (const Entry& e : syms_)
            if (e.func && (!best || e.seq < best->seq) && raw == e.sym.name) best = &e;
        if (!best) return 0;
        return best->sym.start - (text_addr_ - text_offset_);
    }

    size_t symbol_count() override {
        load();
        return syms_.size();
    }

    size_t memory_bytes() const override {
        size_t pool = 0;
        for (const Block& b : pool_) pool += b.size();
        return sizeof(*this) + pool + syms_.capacity() * sizeof(Entry) + image_.image.capacity() +
               name_slot_.capacity() * sizeof(uint32_t) + names_.size() * (sizeof(std::string) + 32) +
               cfi_.memory_bytes();
    }

private:
    void read_header(Elf* elf) {
        GElf_Ehdr eh;
        if (!gelf_getehdr(elf, &eh)) return;
        if (eh.e_type == ET_EXEC)
            type_ = ObjectType::Exec;
        else if (eh.e_type == ET_DYN)
            type_ = ObjectType::Dyn;
        else
            return;
        Section text;
        if (find_section(elf, ".text", &text)) {
            text_addr_ = text.sh.sh_addr;
            text_offset_ = text.sh.sh_offset;
        }
        build_id_ = read_build_id(elf);
    }

    void load() {
        std::call_once(loaded_, [this] {
            do_load();
            done_.store(true, std::memory_order_release);
        });
    }

public:
    bool loaded() const override { return done_.load(std::memory_order_acquire); }

    unwind::CfiTable& cfi() override {
        std::call_once(cfi_once_, [this] { build_cfi(); });
        return cfi_;
    }

private:
    void do_load() {
        if (type_ == ObjectType::Unknown) return;
        Loader ld{pool_, syms_};
        if (image_) {
            ld.load(image_.get(), -1, image_.image.size(), 0);  // the image stays for cfi()
        } else {
            load_file(ld);
        }
        finish();
    }

    // A debug file's symbols, if it is an ELF of the same build (when both have a build-id).
    bool try_debug_file(Loader& ld, const std::string& file) {
        if (file == open_path_ || file == path_) return false;
        ElfFile d = ElfFile::open(file);
        if (!d) return false;
        if (!build_id_.empty()) {
            std::string id = read_build_id(d.get());
            if (!id.empty() && id != build_id_) return false;
        }
        size_t pool_size = ld.pool.size(), nsyms = ld.syms.size();
        if (ld.load(d.get(), d.fd.get(), d.file_size, 0) > 0) return true;
        ld.pool.resize(pool_size);
        ld.syms.erase(ld.syms.begin() + static_cast<ptrdiff_t>(nsyms), ld.syms.end());
        return false;
    }

    void load_file(Loader& ld) {
        std::vector<std::string> debug = debug_files(nullptr);
        // §5.4.3 step 1: the separate debug file by build-id, instead of the binary.
        if (!debug.empty() && try_debug_file(ld, debug.front())) return;
        // The file changed since it was opened: its symbols would not match what was mapped.
        ElfFile f = open_self();
        if (!f) return;
        if (ld.load(f.get(), f.fd.get(), f.file_size, 0) > 0) return;
        // Fallback: .gnu_debuglink next to the file, in its .debug/, and under the debug root.
        debug = debug_files(f.get());
        for (size_t i = build_id_.size() > 2 ? 1 : 0; i < debug.size(); i++)
            if (try_debug_file(ld, debug[i])) return;
    }

    // The binary's .eh_frame and .debug_frame, then the .debug_frame of its debug file (by
    // build-id, else by debuglink) for what they leave uncovered.
    void build_cfi() {
        if (type_ == ObjectType::Unknown) return;
        std::deque<std::string> bytes;
        std::vector<unwind::FrameSection> secs;
        auto add = [&](Elf* elf, const char* name, unwind::FrameSection::Kind kind) {
            Section sec;
            if (!find_section(elf, name, &sec) || sec.sh.sh_type == SHT_NOBITS) return false;
            // Debian's debug files compress their DWARF sections (SHF_COMPRESSED).
            if ((sec.sh.sh_flags & SHF_COMPRESSED) && elf_compress(sec.scn, 0, 0) < 0) return false;
            Elf_Data* d = elf_getdata(sec.scn, nullptr);
            if (!d || !d->d_buf || d->d_size == 0) return false;
            bytes.emplace_back(static_cast<const char*>(d->d_buf), d->d_size);
            secs.push_back(
                {kind, reinterpret_cast<const uint8_t*>(bytes.back().data()), d->d_size, sec.sh.sh_addr});
            return true;
        };
        auto add_both = [&](Elf* elf) {
            add(elf, ".eh_frame", unwind::FrameSection::EhFrame);
            add(elf, ".debug_frame", unwind::FrameSection::DebugFrame);
        };
        if (image_) {
            add_both(image_.get());
        } else {
            ElfFile f = open_self();
            if (!f) return;
            add_both(f.get());
            for (const std::string& file : debug_files(f.get())) {
                ElfFile d = ElfFile::open(file);
                if (!d || (!build_id_.empty() && read_build_id(d.get()) != build_id_)) continue;
                if (add(d.get(), ".debug_frame", unwind::FrameSection::DebugFrame)) break;
            }
        }
        cfi_ = unwind::CfiTable::build(secs);
    }

    // The binary as mapped: through open_path_, else the path as it is (a process that has
    // exited since), if it is still the same file.
    ElfFile open_self() const {
        struct stat st;
        ElfFile f = ElfFile::open(open_path_, &st);
        if (!f && open_path_ != path_) f = ElfFile::open(path_, &st);
        if (!f || st.st_dev != st_.st_dev || st.st_ino != st_.st_ino) return {};
        return f;
    }

    // Where a separate debug file of this object may be, in the order tried: by build-id under
    // the debug root, then the .gnu_debuglink name next to the file, in its .debug/ folder and
    // under the debug root.
    std::vector<std::string> debug_files(Elf* binary) const {
        std::vector<std::string> out;
        const std::string root = debug_root();
        if (build_id_.size() > 2)
            out.push_back(root + "/.build-id/" + build_id_.substr(0, 2) + "/" + build_id_.substr(2) +
                          ".debug");
        const std::string link = binary ? debuglink(binary) : std::string();
        if (!link.empty()) {
            const std::string dir = path_.substr(0, path_.rfind('/') + 1);
            const std::string odir = open_path_.substr(0, open_path_.rfind('/') + 1);
            for (const std::string& c : {odir + link, odir + ".debug/" + link, root + dir + link})
                out.push_back(c);
        }
        return out;
    }

    void finish() {
        std::sort(syms_.begin(), syms_.end(), [](const Entry& a, const Entry& b) {
            if (a.sym.start != b.sym.start) return a.sym.start < b.sym.start;
            if (a.func != b.func) return a.func;
            if (a.sym.size != b.sym.size) return a.sym.size > b.sym.size;
            return a.seq < b.seq;
        });
        // Drop repeats of (start, name), e.g. a function in both .symtab and .dynsym.
        size_t out = 0, run = 0;  // run: first entry of the current same-start run
        for (size_t i = 0; i < syms_.size(); ++i) {
            const Entry& e = syms_[i];
            if (out > 0 && syms_[out - 1].sym.start == e.sym.start) {
                bool dup = false;
                for (size_t j = run; j < out && !dup; ++j)
                    dup = std::strcmp(syms_[j].sym.name, e.sym.name) == 0;
                if (dup) continue;
            } else {
                run = out;
            }
            syms_[out++] = e;
        }
        syms_.erase(syms_.begin() + static_cast<ptrdiff_t>(out), syms_.end());
    }

    std::string open_path_;
    struct stat st_ {};
    std::once_flag cfi_once_;
    unwind::CfiTable cfi_;
    ElfFile image_;  // object_from_image only, until loaded
    std::once_flag loaded_;
    std::atomic<bool> done_{false};
    std::vector<Block> pool_;
    Entries syms_;
    std::mutex names_mu_;
    std::vector<uint32_t> name_slot_;  // per entry: 1 + index in names_, 0 = not demangled yet
    std::deque<std::string> names_;    // a deque: references handed out stay valid
    std::unordered_map<const Symbol*, std::string> foreign_;
};

std::mutex g_cache_mu;
std::map<std::string, std::weak_ptr<Object>>& cache() {
    static auto* m = new std::map<std::string, std::weak_ptr<Object>>;  // never destroyed: used at exit
    return *m;
}

std::shared_ptr<Object> shared(std::shared_ptr<ElfObject> obj) {
    std::string key = obj->key();
    if (key.empty()) return obj;
    std::lock_guard lk(g_cache_mu);
    auto& m = cache();
    auto& slot = m[key];
    if (auto live = slot.lock()) return live;
    slot = obj;
    // Drop expired entries now and then so the map does not grow without bound.
    if (m.size() > 64 && (m.size() & 63) == 0)
        std::erase_if(m, [](const auto& kv) { return kv.second.expired(); });
    return obj;
}

const char* type_name(ObjectType t) {
    return t == ObjectType::Exec ? "EXEC" : t == ObjectType::Dyn ? "DYN" : "UNKNOWN";
}

}  // namespace

void print_object_stats(FILE* out) {
    std::vector<std::shared_ptr<Object>> live;
    {
        std::lock_guard lk(g_cache_mu);
        for (const auto& kv : cache())
            if (auto o = kv.second.lock()) live.push_back(std::move(o));
    }
    std::fprintf(out, "  symbol objects: %zu\n", live.size());
    for (const auto& o : live) {
        char syms[32] = "not loaded";
        if (o->loaded()) std::snprintf(syms, sizeof syms, "%zu symbols", o->symbol_count());
        std::fprintf(out, "    users %ld %-7s %-14s %8zu bytes build-id %.8s %s\n", o.use_count() - 1,
                     type_name(o->type()), syms, o->memory_bytes(),
                     o->build_id().empty() ? "-" : o->build_id().c_str(), o->path().c_str());
    }
}

std::shared_ptr<Object> get_object(const std::string& path, const std::string& open_path) {
    return shared(std::make_shared<ElfObject>(path, open_path.empty() ? path : open_path));
}

std::shared_ptr<Object> object_from_image(const std::string& name, std::string image) {
    // Not shared through the cache by build-id: the image is this process's own copy.
    return std::make_shared<ElfObject>(name, std::move(image), true);
}

std::string get_debug_root() {
    return debug_root();
}

void set_debug_root(std::string root) {
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    std::lock_guard lk(g_root_mu);
    g_debug_root = std::move(root);
}

}  // namespace perfprof::sym
