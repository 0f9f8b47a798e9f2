// pprof's two tools on one file (see pprof_symbols.cpp for how their answers combine):
//  * `nm -n` (or `nm -D -n` without .symtab): NmTable, the routines of pprof's
//    GetProcedureBoundariesViaNm;
//  * `addr2line -f`: DwarfNames, else SymTable::find_function (binutils' symbol fallback).
// Symbol tables stay in the file's pages (mapped) and are read a symbol at a time; what gets
// sorted is an array of symbol indices with their addresses, so a large library costs one
// pass over its symbols and two radix sorts, whatever it holds.
#include "sym/pprof_image.h"

#include "sym/debuginfod.h"
#include "sym/dwarf_names.h"
#include "sym/file_block.h"
#include "sym/object.h"
#include "sym/pprof_symbols.h"

#include "core/fd.h"
#include "core/radix_sort.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace perfprof::sym {

namespace {

using ElfPtr = core::CPtr<Elf, elf_end>;
template <class T>
using PVec = std::vector<T, PopulatedAllocator<T>>;

bool regular_file(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// std::partition_point over [first, last) given a guess `hint` at the answer: from the hint
// forward by doubling steps (a few probes when the answer is near), else a plain search below.
template <class It, class Pred>
It gallop_partition_point(It first, It last, It hint, Pred pred) {
    if (hint < first || hint > last) hint = first;
    if (hint != first && !pred(*std::prev(hint))) return std::partition_point(first, hint, pred);
    size_t step = 1;
    It lo = hint;
    while (lo != last && pred(*lo)) {
        It next = static_cast<size_t>(last - lo) > step ? lo + static_cast<ptrdiff_t>(step) : last;
        if (next == last || !pred(*next)) return std::partition_point(lo + 1, next, pred);
        lo = next;
        step *= 2;
    }
    return lo;
}

std::string debuglink_of(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE || !regular_file(path)) return {};
    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return {};
    ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
    size_t shstrndx = 0;
    if (!elf || elf_kind(elf.get()) != ELF_K_ELF || elf_getshdrstrndx(elf.get(), &shstrndx) != 0) return {};
    for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
        const char* n = elf_strptr(elf.get(), shstrndx, sh.sh_name);
        if (!n || std::strcmp(n, ".gnu_debuglink") != 0) continue;
        Elf_Data* d = elf_rawdata(scn, nullptr);
        if (!d || !d->d_buf || d->d_size == 0) return {};
        const char* p = static_cast<const char*>(d->d_buf);
        size_t len = strnlen(p, d->d_size);
        if (len == 0 || len == d->d_size) return {};
        std::string link(p, len);
        return link.find('/') == std::string::npos ? link : std::string();
    }
    return {};
}

std::string checked(std::string func) {
    if (func.empty() || (func.size() == 1 && func[0] == '0')) return "??";  // PrintSymbols' `|| "??"`
    return func;
}

}  // namespace

struct SymTableSym {
    uint64_t value, size;
    const char* name;
    const char* version;  // .dynsym only: version name, or nullptr
    uint32_t index;
    uint16_t shndx;
    uint8_t info, other;
    bool hidden_version;
};

// One symbol table (.symtab or .dynsym) of one ELF file, as nm and addr2line read it.
class SymTable {
public:
    using Sym = SymTableSym;

    // `dynamic`: .dynsym (with versions) instead of .symtab. Empty when there is none.
    static std::unique_ptr<SymTable> load(const std::string& path, bool dynamic) {
        auto t = std::make_unique<SymTable>();
        if (elf_version(EV_CURRENT) == EV_NONE || !regular_file(path)) return t;
        t->fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!t->fd_) return t;
        struct stat st;
        if (::fstat(t->fd_.get(), &st) != 0) return t;
        uint64_t file_size = static_cast<uint64_t>(st.st_size);
        // ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under us fails a read, no SIGBUS.
        // (The two big tables are mapped below: this process ends within milliseconds.)
        t->elf_.reset(elf_begin(t->fd_.get(), ELF_C_READ, nullptr));
        Elf* elf = t->elf_.get();
        size_t shstrndx = 0;
        if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0) return t;
        Elf_Scn *symscn = nullptr, *versym = nullptr, *verdef = nullptr;
        GElf_Shdr symsh{}, verdefsh{};
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh)) continue;
            size_t ndx = elf_ndxscn(scn);
            if (ndx < SHN_LORESERVE) {
                if (t->secs_.size() <= ndx) t->secs_.resize(ndx + 1);
                t->secs_[ndx] = {static_cast<uint16_t>(ndx), sh.sh_addr, sh.sh_size, sh.sh_flags};
                const char* nm = elf_strptr(elf, shstrndx, sh.sh_name);
                if (nm && std::strcmp(nm, ".fini") == 0) t->fini_addr_ = sh.sh_addr;
            }
            if (!symscn && sh.sh_type == (dynamic ? SHT_DYNSYM : SHT_SYMTAB)) symscn = scn, symsh = sh;
            if (sh.sh_type == SHT_GNU_versym) versym = scn;
            if (sh.sh_type == SHT_GNU_verdef) verdef = scn, verdefsh = sh;
        }
        if (!symscn || symsh.sh_type == SHT_NOBITS || symsh.sh_entsize == 0) return t;
        Elf_Scn* strscn = elf_getscn(elf, symsh.sh_link);
        GElf_Shdr strsh;
        if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB) return t;
        t->strs_ = map_block(t->fd_.get(), strsh.sh_offset, strsh.sh_size, file_size, true);
        if (t->strs_.empty()) return t;
        t->nstrs_ = strsh.sh_size;  // any name offset below it is NUL-terminated
        const char* id = elf_getident(elf, nullptr);
        t->native_ = id && id[EI_CLASS] == ELFCLASS64 && symsh.sh_entsize == sizeof(Elf64_Sym) &&
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                     id[EI_DATA] == ELFDATA2LSB;
#else
                     id[EI_DATA] == ELFDATA2MSB;
#endif
        if (t->native_) {
            t->raw_ = map_block(t->fd_.get(), symsh.sh_offset, symsh.sh_size, file_size, false);
            if (t->raw_.empty()) return t;
        } else if (!(t->data_ = elf_getdata(symscn, nullptr))) {
            return t;
        }
        if (dynamic && versym && verdef) t->read_versions(versym, verdef, verdefsh, symsh.sh_link);
        // One pass in table order: the symbols nm lists and those addr2line may fall back to.
        const size_t n = symsh.sh_size / symsh.sh_entsize;
        t->n_ = n;
        t->nm_idx_.reserve(n);
        t->fn_idx_.reserve(n);
        for (size_t i = 1; i < n; ++i) {
            GElf_Sym s;
            if (!t->raw(i, &s)) break;
            if (s.st_shndx == SHN_UNDEF || s.st_name >= t->nstrs_) continue;  // nm and addr2line skip them
            ++t->kept_;
            int type = GELF_ST_TYPE(s.st_info);
            if (type != STT_SECTION && type != STT_FILE) t->nm_idx_.push_back(static_cast<uint32_t>(i));
            // binutils' maybe_function_sym
            if (s.st_shndx >= t->secs_.size() || type == STT_OBJECT || type == STT_TLS ||
                type == STT_SECTION || type == STT_FILE)
                continue;
            if (s.st_size == 0 && GELF_ST_BIND(s.st_info) == STB_LOCAL && type == STT_NOTYPE &&
                GELF_ST_VISIBILITY(s.st_other) == STV_HIDDEN)
                continue;
            t->fn_idx_.push_back(static_cast<uint32_t>(i));
        }
        return t;
    }

    bool empty() const {
        return kept_ == 0;
    }

    Sym sym(uint32_t i) const {
        GElf_Sym s{};
        raw(i, &s);
        Sym e{s.st_value, s.st_size, strs_.data() + s.st_name, nullptr, i, s.st_shndx, s.st_info,
              s.st_other, false};
        if (versyms_ && i < nversyms_) {
            uint16_t ver = versyms_[i];
            size_t vi = ver & 0x7fff;
            // A version's own definition symbol (ABS `LLVM_14`) is listed bare.
            if (vi >= 2 && vi < vernames_.size() && vernames_[vi] &&
                (s.st_shndx != SHN_ABS || std::strcmp(vernames_[vi], e.name) != 0)) {
                e.version = vernames_[vi];
                e.hidden_version = (ver & 0x8000) != 0;
            }
        }
        return e;
    }

    // nm's letter is `t` or `T`: code, neither weak, unique nor an ifunc.
    bool text_letter(const Sym& s) const {
        int b = GELF_ST_BIND(s.info), t = GELF_ST_TYPE(s.info);
        if (b == STB_WEAK || b == STB_GNU_UNIQUE || t == STT_GNU_IFUNC || s.shndx == SHN_UNDEF ||
            s.shndx >= secs_.size())
            return false;
        return (secs_[s.shndx].flags & SHF_EXECINSTR) != 0;
    }

    // Where a symbol named `_fini` can be: the start of the .fini section (crti's `_fini`).
    uint64_t fini_addr() const {
        return fini_addr_;
    }

    // nm -n's list (symbols by address, then index; names order runs of one address later).
    void sort_nm() {
        sort_by_address(nm_idx_, nm_vals_, nullptr);
    }
    const PVec<uint32_t>& nm_idx() const {
        return nm_idx_;
    }
    const PVec<uint64_t>& nm_vals() const {
        return nm_vals_;
    }

    // The function-like symbols of each section, by (address, index).
    void index_functions() {
        if (indexed_) return;
        indexed_ = true;
        fn_ranges_.assign(secs_.size(), {0, 0});
        sort_by_address(fn_idx_, fn_vals_, &fn_ranges_);
    }

    // binutils' _bfd_elf_find_function: among the function-like symbols of the section that
    // holds `addr`, the one with the greatest address <= addr (no size check). `sec`, `pos`:
    // the caller's hint (the previous lookup's section and position). Thread-safe once
    // index_functions() has run.
    bool find_function(uint64_t addr, uint16_t& sec, size_t& pos, Sym* out) const {
        const Sec* c = sec && sec < secs_.size() ? &secs_[sec] : nullptr;
        if (!c || addr < c->addr || addr - c->addr >= c->size) {
            c = nullptr;
            for (const Sec& x : secs_)
                if ((x.flags & SHF_ALLOC) && x.size && addr >= x.addr && addr - x.addr < x.size) {
                    c = &x;
                    break;
                }
            if (!c) return false;
            sec = c->index, pos = 0;
        }
        auto [b, e] = fn_ranges_[c->index];
        auto first = fn_vals_.begin() + static_cast<ptrdiff_t>(b),
             last = fn_vals_.begin() + static_cast<ptrdiff_t>(e);
        auto it = gallop_partition_point(first, last, fn_vals_.begin() + static_cast<ptrdiff_t>(pos),
                                         [addr](uint64_t v) { return v <= addr; });
        pos = static_cast<size_t>(it - fn_vals_.begin());
        if (it == first) return false;
        uint64_t value = *std::prev(it);
        auto lo = std::prev(it);
        while (lo != first && *std::prev(lo) == value) --lo;
        // Same address: symbol table order decides, then the size rule.
        bool have = false;
        uint64_t best_size = 0;
        for (auto i = lo; i != it; ++i) {
            Sym s = sym(fn_idx_[static_cast<size_t>(i - fn_vals_.begin())]);
            uint64_t size = s.size ? s.size : 1;
            if (!have) {
                *out = s, best_size = size, have = true;
            } else if (value + best_size <= addr) {
                if (size > best_size) *out = s, best_size = size;
            } else if (value + size > addr && size < best_size) {
                *out = s, best_size = size;
            }
        }
        return have;
    }

private:
    struct Sec {
        uint16_t index;
        uint64_t addr, size, flags;
    };

    bool raw(size_t i, GElf_Sym* s) const {
        if (i >= n_) return false;
        if (!native_) return gelf_getsym(data_, static_cast<int>(i), s) != nullptr;
        const auto* p = reinterpret_cast<const Elf64_Sym*>(raw_.data()) + i;
        s->st_name = p->st_name, s->st_info = p->st_info, s->st_other = p->st_other;
        s->st_shndx = p->st_shndx, s->st_value = p->st_value, s->st_size = p->st_size;
        return true;
    }

    void read_versions(Elf_Scn* versym, Elf_Scn* verdef, const GElf_Shdr& verdefsh, size_t strtab) {
        Elf_Data* vsd = elf_getdata(versym, nullptr);
        if (vsd && vsd->d_buf && vsd->d_type == ELF_T_HALF)
            versyms_ = static_cast<const uint16_t*>(vsd->d_buf), nversyms_ = vsd->d_size / 2;
        Elf_Data* vdd = elf_getdata(verdef, nullptr);
        size_t off = 0;
        for (size_t k = 0; vdd && k < verdefsh.sh_info + 1u && off < vdd->d_size; ++k) {
            GElf_Verdef vd;
            GElf_Verdaux va;
            if (!gelf_getverdef(vdd, static_cast<int>(off), &vd)) break;
            if (gelf_getverdaux(vdd, static_cast<int>(off + vd.vd_aux), &va)) {
                // Version names live in .dynstr, already mapped: elf_strptr would read it again.
                const char* nm = nullptr;
                if (verdefsh.sh_link == strtab)
                    nm = va.vda_name < nstrs_ ? strs_.data() + va.vda_name : nullptr;
                else
                    nm = elf_strptr(elf_.get(), verdefsh.sh_link, va.vda_name);
                if (nm && vd.vd_ndx < 0x8000) {
                    if (vernames_.size() <= vd.vd_ndx) vernames_.resize(vd.vd_ndx + 1u);
                    vernames_[vd.vd_ndx] = nm;
                }
            }
            if (vd.vd_next == 0) break;
            off += vd.vd_next;
        }
        if (vernames_.empty()) versyms_ = nullptr;
    }

    // Orders symbol indices `idx` (ascending) by (section if `ranges`, address, index) and
    // fills `vals` with their addresses; `ranges`: each section's [begin, end) in the result.
    // Packed 64-bit keys sorted by radix when section, address and index bits fit.
    void sort_by_address(PVec<uint32_t>& idx, PVec<uint64_t>& vals,
                         std::vector<std::pair<size_t, size_t>>* ranges) const {
        const size_t m = idx.size();
        vals.resize(m);
        uint64_t maxv = 0;
        for (uint32_t i : idx) {
            GElf_Sym s;
            raw(i, &s);
            maxv = std::max<uint64_t>(maxv, s.st_value);
        }
        const unsigned ibits = static_cast<unsigned>(std::bit_width(n_));
        const unsigned vbits = static_cast<unsigned>(std::bit_width(maxv));
        const unsigned sbits = ranges ? static_cast<unsigned>(std::bit_width(secs_.size())) : 0;
        auto note = [&](size_t k, uint16_t sec) {
            if (!ranges) return;
            auto& r = (*ranges)[sec];
            if (r.second == 0) r.first = k;
            r.second = k + 1;
        };
        if (ibits + vbits + sbits <= 64) {
            PVec<uint64_t> keys;
            keys.reserve(m);
            for (size_t k = 0; k < m; ++k) {
                GElf_Sym s;
                raw(idx[k], &s);
                uint64_t key = s.st_value;
                if (ranges) key |= uint64_t{s.st_shndx} << vbits;  // vbits < 64 as sbits > 0
                keys.push_back((ibits < 64 ? key << ibits : 0) | idx[k]);
            }
            core::radix_sort(keys);
            const uint64_t imask = (uint64_t{1} << ibits) - 1;
            const uint64_t vmask = vbits == 64 ? ~uint64_t{0} : (uint64_t{1} << vbits) - 1;
            for (size_t k = 0; k < m; ++k) {
                idx[k] = static_cast<uint32_t>(keys[k] & imask);
                vals[k] = (keys[k] >> ibits) & vmask;
                note(k, static_cast<uint16_t>(vbits + ibits < 64 ? keys[k] >> (vbits + ibits) : 0));
            }
            return;
        }
        std::vector<std::tuple<uint16_t, uint64_t, uint32_t>> full(m);
        for (size_t k = 0; k < m; ++k) {
            GElf_Sym s;
            raw(idx[k], &s);
            full[k] = {ranges ? s.st_shndx : uint16_t{0}, s.st_value, idx[k]};
        }
        std::sort(full.begin(), full.end());
        for (size_t k = 0; k < m; ++k) {
            idx[k] = std::get<2>(full[k]);
            vals[k] = std::get<1>(full[k]);
            note(k, std::get<0>(full[k]));
        }
    }

    core::Fd fd_;
    ElfPtr elf_;                // `data_` and version names point into its memory
    Block strs_, raw_;          // the string table and (native ELF64) the symbols, mapped
    Elf_Data* data_ = nullptr;  // the symbols otherwise
    bool native_ = false;
    size_t n_ = 0, nstrs_ = 0, kept_ = 0;
    const uint16_t* versyms_ = nullptr;  // by symbol index, host byte order
    size_t nversyms_ = 0;
    std::vector<const char*> vernames_;  // by version index
    std::vector<Sec> secs_;              // by section index; [0] and the gaps are empty
    uint64_t fini_addr_ = UINT64_MAX;
    PVec<uint32_t> nm_idx_, fn_idx_;
    PVec<uint64_t> nm_vals_, fn_vals_;
    std::vector<std::pair<size_t, size_t>> fn_ranges_;  // by section index
    bool indexed_ = false;
};

// One routine of `nm -n` as pprof's GetProcedureBoundariesViaNm reads it.
struct NmRoutine {
    uint64_t start, end;
    SymTableSym sym;
    bool tagged;  // its name carries `<start>` (pprof's tag for a name seen at one address)
    size_t run;   // identity: its first position in the table
};

// Every listed symbol opens a routine that ends where the next address starts; at one address
// the last `t`/`T` symbol in nm's order (address, then name) wins, else the first one listed.
class NmTable {
public:
    explicit NmTable(SymTable& t) : t_(t) {
        t.sort_nm();
        const auto& idx = t.nm_idx();
        const auto& vals = t.nm_vals();
        const size_t n = idx.size();
        std::unordered_map<std::string_view, size_t> seen;  // untagged name -> its routine
        std::vector<SymTableSym> run;
        for (size_t b = 0; b < n;) {
            size_t e = b + 1;
            while (e < n && vals[e] == vals[b]) ++e;
            if (e - b == 1) {
                if (vals[b] == t.fini_addr() && std::strcmp(t.sym(idx[b]).name, "_fini") == 0)
                    has_fini_ = true;
                ++alive_;
                b = e;
                continue;
            }
            run.clear();
            for (size_t k = b; k < e; ++k) run.push_back(t.sym(idx[k]));
            std::stable_sort(run.begin(), run.end(), [](const SymTableSym& x, const SymTableSym& y) {
                return std::strcmp(x.name, y.name) < 0;
            });
            if (std::strcmp(run[0].name, "_fini") == 0) has_fini_ = true;
            size_t c = 0;
            for (size_t j = 1; j < run.size(); ++j)
                if (t.text_letter(run[j])) c = j;
            Run info{run[c].index, c == 0, false};
            if (!info.tagged && run[c].name[0] == '\0') {
                info.removed = true;  // pprof's /./ on an empty name
            } else if (!info.tagged) {
                // pprof keeps routines in a hash by name: an untagged name met again replaces
                // the earlier routine of that name.
                auto [it, fresh] = seen.try_emplace(run[c].name, b);
                if (!fresh) {
                    multi_[it->second].removed = true;
                    --alive_;
                    it->second = b;
                }
            }
            if (!info.removed) ++alive_;
            multi_.emplace(b, info);
            b = e;
        }
    }

    bool empty() const { return alive_ == 0; }
    bool has_fini() const { return has_fini_; }

    // The routine pprof gives `addr`: the first one that ends after it. `hint`: where the
    // caller's previous lookup ended.
    bool find(uint64_t addr, size_t& hint, NmRoutine* out) const {
        const auto& vals = t_.nm_vals();
        const size_t n = vals.size();
        auto it =
            gallop_partition_point(vals.begin(), vals.end(), vals.begin() + static_cast<ptrdiff_t>(hint),
                                   [addr](uint64_t v) { return v <= addr; });
        size_t p = static_cast<size_t>(it - vals.begin());
        hint = p;
        if (p == n) return false;  // at or past the last address: the last routine ends where it starts
        size_t b = p == 0 ? 0 : p - 1;
        while (b > 0 && vals[b - 1] == vals[b]) --b;
        const Run* info = nullptr;
        for (;;) {
            auto m = multi_.find(b);
            info = m == multi_.end() ? nullptr : &m->second;
            if (!info || !info->removed) break;
            for (uint64_t v = vals[b]; b < n && vals[b] == v;) ++b;
            if (b == n) return false;
        }
        size_t e = b + 1;
        while (e < n && vals[e] == vals[b]) ++e;
        out->start = vals[b];
        out->end = e < n ? vals[e] : vals[b];
        out->sym = t_.sym(info ? info->chosen : t_.nm_idx()[b]);
        out->tagged = info ? info->tagged : true;
        out->run = b;
        return true;
    }

    // pprof's full name of a routine: "name@@VER<0000000000001234>".
    static std::string full_name(const NmRoutine& r) {
        std::string n = demangle(r.sym.name);
        if (r.sym.version) {
            n += r.sym.hidden_version ? "@" : "@@";
            n += r.sym.version;
        }
        if (r.tagged) {
            char buf[24];
            std::snprintf(buf, sizeof buf, "<%016llx>", static_cast<unsigned long long>(r.start));
            n += buf;
        }
        return n;
    }

private:
    struct Run {
        uint32_t chosen;  // symbol index
        bool tagged, removed;
    };
    const SymTable& t_;
    std::unordered_map<size_t, Run> multi_;  // the runs of several symbols, by first position
    size_t alive_ = 0;
    bool has_fini_ = false;
};

PprofImage::PprofImage(const std::string& path, const std::string& build_id, const SymbolsRun& run) {
    const std::string& root = run.debug_root;
    image_ = path;
    if (!path.empty() && path[0] == '/') {
        if (regular_file(root + path))
            image_ = root + path;
        else if (regular_file(root + path + ".debug"))
            image_ = root + path + ".debug";
    }
    own_ = SymTable::load(image_, false);
    const bool has_symtab = !own_->empty();
    if (!has_symtab) own_ = SymTable::load(image_, true);
    // addr2line: the image's DWARF, else the separate debug file's (and its .symtab). libdw
    // allocates megabytes (decompressed sections, parsed units): made resident at once.
    auto open_dwarf = [batch = run.batch](const std::string& p) {
        return DwarfNames::open(p, [batch] {
            if (batch) prefault_heap(size_t(16) << 20);
        });
    };
    if ((dwarf_ = open_dwarf(image_))) return;
    std::vector<std::string> cands;
    if (build_id.size() > 2)
        cands.push_back(root + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug");
    if (std::string link = debuglink_of(image_); !link.empty()) {
        std::string dir = image_.substr(0, image_.rfind('/') + 1);
        cands.push_back(dir + link);
        cands.push_back(dir + ".debug/" + link);
        cands.push_back(root + dir + link);
    }
    for (const std::string& c : cands) {
        if (c == image_) continue;
        if ((dwarf_ = open_dwarf(c))) {
            debug_syms_ = SymTable::load(c, false);
            return;
        }
    }
    // No names of its own nor local debug file: a debuginfod server's (DEBUGINFOD_URLS).
    if (has_symtab || build_id.empty()) return;
    if (std::string remote = Debuginfod::process().debug_file(build_id, path); !remote.empty()) {
        dwarf_ = open_dwarf(remote);
        debug_syms_ = SymTable::load(remote, false);
        if (debug_syms_->empty()) debug_syms_.reset();
    }
}

PprofImage::~PprofImage() = default;

void PprofImage::build_nm() {
    nm_ = std::make_unique<NmTable>(*own_);
}

void PprofImage::build_index() {
    if (!dwarf_) own_->index_functions();  // with DWARF, on the first fallback (one thread)
}

bool PprofImage::shared() const {
    return !dwarf_;
}

std::string PprofImage::name(uint64_t addr, uint64_t pc, Cursor& cur) {
    NmRoutine routine;
    const NmRoutine* r = !nm_->empty() && nm_->find(addr, cur.nm, &routine) ? &routine : nullptr;
    DwarfFunction inner, outer;
    if (dwarf_ && dwarf_->lookup(addr, &inner, &outer)) {
        // With -i, a first line `_fini` reads as pprof's separator: the address stays
        // unnamed. (pprof then also pairs the object's later addresses with the answers of
        // their predecessors; that slip is not reproduced.)
        if (nm_->has_fini() && !inner.linkage && inner.name == "_fini") return "??";
        const DwarfFunction& f = nm_->has_fini() ? outer : inner;
        std::string a2l = "??";
        if (!f.name.empty()) a2l = f.linkage ? demangle(f.name) : f.name;
        return combine(a2l, r, pc);
    }
    SymTable& syms = debug_syms_ ? *debug_syms_ : *own_;
    syms.index_functions();  // done already unless the image has DWARF (one thread uses it)
    SymTableSym s;
    bool have = syms.find_function(addr, cur.sec, cur.fn, &s);
    // From here the answer depends on (routine, symbol) alone, bar the `0x...` form, which
    // has no routine.
    if (r && have && r->run == cur.last_run && s.index == cur.last_sym) return cur.last;
    std::string n = name_of_symbol(r, have ? &s : nullptr, pc);
    if (r && have) cur.last_run = r->run, cur.last_sym = s.index, cur.last = n;
    return n;
}

// The answer when addr2line falls back to the symbol table and finds `s` (or nothing).
std::string PprofImage::name_of_symbol(const NmRoutine* r, const SymTableSym* s, uint64_t pc) const {
    if (!s) return combine("??", r, pc);
    if (nm_->has_fini() && std::strcmp(s->name, "_fini") == 0) return "??";
    // Both tools name the same symbol (the common case without DWARF): the nm form
    // "D@@VER<tag>" shortens to short(D)@@VER, and is taken when it starts with short(D),
    // i.e. when D does. One demangling and one shortening.
    if (r && (r->sym.name == s->name || std::strcmp(r->sym.name, s->name) == 0)) {
        std::string d = demangle(s->name);
        std::string f = pprof_short_name(d);
        if (r->sym.version && d.starts_with(f)) {
            f += r->sym.hidden_version ? "@" : "@@";
            f += r->sym.version;
        }
        return checked(std::move(f));
    }
    return combine(demangle(s->name), r, pc);
}

// addr2line's (demangled) answer `a2l` and nm's routine `r` made into pprof's name.
std::string PprofImage::combine(const std::string& a2l, const NmRoutine* r, uint64_t pc) const {
    std::string func = a2l == "??" ? a2l : pprof_short_name(a2l);
    if (!nm_->empty()) {
        std::string nm;
        if (r) {
            nm = NmTable::full_name(*r);
        } else {
            char buf[24];
            std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(pc));
            nm = buf;
        }
        if (a2l == "??" || nm.starts_with(func)) func = r ? pprof_short_name(nm) : nm;
    }
    return checked(std::move(func));
}

}  // namespace perfprof::sym
