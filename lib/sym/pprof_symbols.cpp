// `perf-prof --symbols BINARY` (SPEC §6). Resolution goes through Syms (pid 0), the same
// maps/DSO/object layers the stack printers use.
//
// Names (SPEC §6, decision: print what `pprof --symbols` prints). pprof names an address of a
// mapped file IMAGE (/usr/lib/debug/IMAGE when that exists) with two tools, and so do we:
//  * `addr2line -f -C -e IMAGE` (with -i when nm lists `_fini`, see below): the innermost
//    DWARF function containing the address (a linkage name, demangled, over DW_AT_name), from
//    IMAGE's DWARF or the separate debug file found by build-id or .gnu_debuglink. Without a
//    DWARF function it falls back to the symbol table of the file that holds the DWARF (IMAGE's
//    .symtab, else its .dynsym): the nearest preceding function-like symbol of the address's
//    section, whatever its size (binutils' "better fit" among symbols at the same address).
//  * `nm -n --demangle IMAGE`, or `nm -D -n` when IMAGE has no .symtab (then names carry their
//    version, `name@@VER`): every listed symbol opens a range that ends where the next address
//    starts; at one address the last `t`/`T` symbol in nm's order (address, then name) wins,
//    else the first one listed. An address past the last range gets `0x%016x`.
//  * The nm name replaces addr2line's whenever it starts with addr2line's short name, or when
//    addr2line knows nothing. With -i (the image's nm lists `_fini`) the printed name is the
//    outermost function of addr2line's inline chain instead of the innermost one.
// Finally pprof's ShortFunctionName.
#include "sym/pprof_symbols.h"

#include "sym/file_block.h"

#include "core/text.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fd.h"
#include "sym/dwarf_names.h"
#include "sym/syms.h"

namespace perfprof::sym {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

bool perl_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool perl_word(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Removes every innermost `open ... close` group (no `open`/`close` inside), repeatedly; with
// `with_const`, a following `\s*const` goes too. Returns whether anything was removed.
bool strip_groups(std::string& s, char open, char close, bool with_const) {
    // Balanced groups (the common case): the repeated removal of innermost groups removes
    // every outermost group, so one pass does.
    int depth = 0;
    bool balanced = true, found = false;
    for (char c : s) {
        if (c == open) {
            ++depth;
            found = true;
        } else if (c == close && --depth < 0) {
            balanced = false;
            break;
        }
    }
    if (!found) return false;
    if (balanced && depth == 0) {
        std::string out;
        out.reserve(s.size());
        for (size_t i = 0; i < s.size();) {
            if (s[i] != open) {
                size_t j = s.find(open, i);
                if (j == std::string::npos) j = s.size();
                out.append(s, i, j - i);
                i = j;
                continue;
            }
            int d = 0;
            do {
                if (s[i] == open)
                    ++d;
                else if (s[i] == close)
                    --d;
                ++i;
            } while (d > 0);
            if (with_const) {
                size_t m = i;
                while (m < s.size() && perl_space(s[m])) ++m;
                if (s.compare(m, 5, "const") == 0) i = m + 5;
            }
        }
        s = std::move(out);
        return true;
    }
    bool any = false;
    for (;;) {
        std::string out;
        bool changed = false;
        size_t i = 0;
        while (i < s.size()) {
            if (s[i] == open) {
                size_t j = i + 1;
                while (j < s.size() && s[j] != open && s[j] != close) ++j;
                if (j < s.size() && s[j] == close) {
                    size_t k = j + 1;
                    if (with_const) {
                        size_t m = k;
                        while (m < s.size() && perl_space(s[m])) ++m;
                        if (s.compare(m, 5, "const") == 0) k = m + 5;
                    }
                    i = k;
                    changed = true;
                    continue;
                }
            }
            out += s[i++];
        }
        if (!changed) return any;
        any = true;
        s = std::move(out);
    }
}

using ElfPtr = core::CPtr<Elf, elf_end>;

bool regular_file(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// One symbol table (.symtab or .dynsym) of one ELF file, as nm and addr2line read it.
class SymFile {
public:
    struct Sym {
        uint64_t value, size;
        const char* name;
        const char* version;  // .dynsym only: version name, or nullptr
        uint32_t index;
        uint16_t shndx;
        uint8_t info, other;
        bool hidden_version;
    };

    // `dynamic`: .dynsym (with versions) instead of .symtab. Empty when there is none.
    static std::unique_ptr<SymFile> load(const std::string& path, bool dynamic) {
        auto f = std::make_unique<SymFile>();
        if (elf_version(EV_CURRENT) == EV_NONE || !regular_file(path)) return f;
        f->fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!f->fd_) return f;
        struct stat st;
        if (::fstat(f->fd_.get(), &st) != 0) return f;
        uint64_t file_size = static_cast<uint64_t>(st.st_size);
        // ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under us fails a read, no SIGBUS.
        f->elf_.reset(elf_begin(f->fd_.get(), ELF_C_READ, nullptr));
        Elf* elf = f->elf_.get();
        if (!elf || elf_kind(elf) != ELF_K_ELF) return f;
        Elf_Scn *symscn = nullptr, *versym = nullptr, *verdef = nullptr;
        GElf_Shdr symsh{}, verdefsh{};
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh)) continue;
            f->secs_.push_back({static_cast<uint16_t>(elf_ndxscn(scn)), sh.sh_addr, sh.sh_size, sh.sh_flags});
            if (!symscn && sh.sh_type == (dynamic ? SHT_DYNSYM : SHT_SYMTAB)) symscn = scn, symsh = sh;
            if (sh.sh_type == SHT_GNU_versym) versym = scn;
            if (sh.sh_type == SHT_GNU_verdef) verdef = scn, verdefsh = sh;
        }
        if (!symscn || symsh.sh_type == SHT_NOBITS || symsh.sh_entsize == 0) return f;
        // The string table and (for native ELF64) the symbols are read straight into memory of
        // their own: names point into `strs_`.
        Elf_Scn* strscn = elf_getscn(elf, symsh.sh_link);
        GElf_Shdr strsh;
        if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB) return f;
        f->strs_ = pread_block(f->fd_.get(), strsh.sh_offset, strsh.sh_size, file_size);
        if (f->strs_.empty()) return f;
        const char* id = elf_getident(elf, nullptr);
        bool native = id && id[EI_CLASS] == ELFCLASS64 && symsh.sh_entsize == sizeof(Elf64_Sym) &&
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                      id[EI_DATA] == ELFDATA2LSB;
#else
                      id[EI_DATA] == ELFDATA2MSB;
#endif
        Block raw;
        Elf_Data* data = nullptr;
        if (native) {
            raw = pread_block(f->fd_.get(), symsh.sh_offset, symsh.sh_size, file_size);
            if (raw.empty()) return f;
        } else if (!(data = elf_getdata(symscn, nullptr))) {
            return f;
        }
        std::vector<const char*> vernames;  // by version index
        Elf_Data* vsd = nullptr;
        if (dynamic && versym && verdef) {
            vsd = elf_getdata(versym, nullptr);
            Elf_Data* vdd = elf_getdata(verdef, nullptr);
            size_t off = 0;
            for (size_t n = 0; vdd && n < verdefsh.sh_info + 1u && off < vdd->d_size; ++n) {
                GElf_Verdef vd;
                GElf_Verdaux va;
                if (!gelf_getverdef(vdd, static_cast<int>(off), &vd)) break;
                if (gelf_getverdaux(vdd, static_cast<int>(off + vd.vd_aux), &va)) {
                    // Version names live in .dynstr, already read: elf_strptr would read it again.
                    const char* nm = nullptr;
                    if (verdefsh.sh_link == symsh.sh_link)
                        nm = va.vda_name < f->strs_.size() - 1 ? f->strs_.data() + va.vda_name : nullptr;
                    else
                        nm = elf_strptr(elf, verdefsh.sh_link, va.vda_name);
                    if (nm && vd.vd_ndx < 0x8000) {
                        if (vernames.size() <= vd.vd_ndx) vernames.resize(vd.vd_ndx + 1u);
                        vernames[vd.vd_ndx] = nm;
                    }
                }
                if (vd.vd_next == 0) break;
                off += vd.vd_next;
            }
        }
        size_t n = symsh.sh_size / symsh.sh_entsize;
        f->syms_.reserve(n);
        const size_t nstrs = f->strs_.size() - 1;
        for (size_t i = 1; i < n; ++i) {
            GElf_Sym s;
            if (native) {
                const auto* p = reinterpret_cast<const Elf64_Sym*>(raw.data()) + i;
                s.st_name = p->st_name, s.st_info = p->st_info, s.st_other = p->st_other;
                s.st_shndx = p->st_shndx, s.st_value = p->st_value, s.st_size = p->st_size;
            } else if (!gelf_getsym(data, static_cast<int>(i), &s)) {
                break;
            }
            if (s.st_shndx == SHN_UNDEF || s.st_name >= nstrs) continue;  // nm and addr2line skip them
            const char* name = f->strs_.data() + s.st_name;
            Sym e{s.st_value, s.st_size, name,       nullptr, static_cast<uint32_t>(i),
                  s.st_shndx, s.st_info, s.st_other, false};
            if (vsd && !vernames.empty() && s.st_shndx != SHN_UNDEF) {
                GElf_Versym v;
                if (gelf_getversym(vsd, static_cast<int>(i), &v)) {
                    size_t vi = v & 0x7fff;
                    // A version's own definition symbol (ABS `LLVM_14`) is listed bare.
                    if (vi >= 2 && vi < vernames.size() && vernames[vi] &&
                        (s.st_shndx != SHN_ABS || std::strcmp(vernames[vi], name) != 0)) {
                        e.version = vernames[vi];
                        e.hidden_version = (v & 0x8000) != 0;
                    }
                }
            }
            f->syms_.push_back(e);
        }
        // nm -n: by address, then by name.
        // (Names compared only within runs of one address: most addresses have one symbol.)
        auto& v = f->syms_;
        std::sort(v.begin(), v.end(), [](const Sym& a, const Sym& b) {
            return a.value != b.value ? a.value < b.value : a.index < b.index;
        });
        for (size_t i = 0; i < v.size();) {
            size_t j = i + 1;
            while (j < v.size() && v[j].value == v[i].value) ++j;
            if (j - i > 1)
                std::stable_sort(v.begin() + static_cast<ptrdiff_t>(i), v.begin() + static_cast<ptrdiff_t>(j),
                                 [](const Sym& a, const Sym& b) { return std::strcmp(a.name, b.name) < 0; });
            i = j;
        }
        return f;
    }

    const std::vector<Sym, PopulatedAllocator<Sym>>& syms() const {
        return syms_;
    }

    // The symbols `nm` lists (no section/file symbols, nothing undefined).
    static bool listed(const Sym& s) {
        int t = GELF_ST_TYPE(s.info);
        return s.shndx != SHN_UNDEF && t != STT_SECTION && t != STT_FILE;
    }
    // nm's letter is `t` or `T`: code, neither weak, unique nor an ifunc.
    bool text_letter(const Sym& s) const {
        int b = GELF_ST_BIND(s.info), t = GELF_ST_TYPE(s.info);
        if (b == STB_WEAK || b == STB_GNU_UNIQUE || t == STT_GNU_IFUNC || s.shndx == SHN_UNDEF ||
            s.shndx >= SHN_LORESERVE)
            return false;
        const Sec* sec = section(s.shndx);
        return sec && (sec->flags & SHF_EXECINSTR);
    }

    // binutils' _bfd_elf_find_function: among the function-like symbols of the section that
    // holds `addr`, the one with the greatest address <= addr (no size check); nullptr if none.
    const Sym* find_function(uint64_t addr) {
        const Sec* sec = nullptr;
        for (const Sec& c : secs_)
            if ((c.flags & SHF_ALLOC) && c.size && addr >= c.addr && addr - c.addr < c.size) {
                sec = &c;
                break;
            }
        if (!sec) return nullptr;
        if (!by_sec_built_) index_functions();
        auto bs = by_sec_.find(sec->index);
        if (bs == by_sec_.end()) return nullptr;
        const auto& v = bs->second;
        auto it =
            std::upper_bound(v.begin(), v.end(), addr, [](uint64_t a, const Sym* s) { return a < s->value; });
        if (it == v.begin()) return nullptr;
        uint64_t value = (*std::prev(it))->value;
        auto first = std::prev(it);
        while (first != v.begin() && (*std::prev(first))->value == value) --first;
        // Same address: symbol table order decides, then the size rule.
        const Sym* best = nullptr;
        uint64_t best_size = 0;
        for (auto i = first; i != it; ++i) {
            const Sym* s = *i;
            uint64_t size = s->size ? s->size : 1;
            if (!best) {
                best = s, best_size = size;
            } else if (value + best_size <= addr) {
                if (size > best_size) best = s, best_size = size;
            } else if (value + size > addr && size < best_size) {
                best = s, best_size = size;
            }
        }
        return best;
    }

private:
    // The symbols binutils' maybe_function_sym accepts, per section, by (address, index).
    void index_functions() {
        by_sec_built_ = true;
        std::unordered_map<uint16_t, size_t> counts;
        for (const Sym& s : syms_) ++counts[s.shndx];
        for (auto [sec, n] : counts) by_sec_[sec].reserve(n);
        for (const Sym& s : syms_) {
            int t = GELF_ST_TYPE(s.info);
            if (s.shndx == SHN_UNDEF || s.shndx >= SHN_LORESERVE || t == STT_OBJECT || t == STT_TLS ||
                t == STT_SECTION || t == STT_FILE)
                continue;
            if (s.size == 0 && GELF_ST_BIND(s.info) == STB_LOCAL && t == STT_NOTYPE &&
                GELF_ST_VISIBILITY(s.other) == STV_HIDDEN)
                continue;
            by_sec_[s.shndx].push_back(&s);
        }
        for (auto& [_, v] : by_sec_)
            std::stable_sort(v.begin(), v.end(), [](const Sym* a, const Sym* b) {
                return a->value != b->value ? a->value < b->value : a->index < b->index;
            });
    }

    struct Sec {
        uint16_t index;
        uint64_t addr, size, flags;
    };
    const Sec* section(uint16_t index) const {
        for (const Sec& c : secs_)
            if (c.index == index) return &c;
        return nullptr;
    }
    core::Fd fd_;
    ElfPtr elf_;  // version names point into its data
    Block strs_;  // the symbols' string table; names point into it
    std::vector<Sec> secs_;
    std::vector<Sym, PopulatedAllocator<Sym>> syms_;
    bool by_sec_built_ = false;
    std::unordered_map<uint16_t, std::vector<const Sym*, PopulatedAllocator<const Sym*>>> by_sec_;
};

// `nm -n` as pprof's GetProcedureBoundariesViaNm reads it: routines and their end.
class NmTable {
public:
    NmTable() = default;
    explicit NmTable(const SymFile& f) {
        bool have = false;
        uint64_t last = 0;
        const SymFile::Sym* cur = nullptr;
        bool tagged = false;
        routines_.reserve(f.syms().size());
        for (const SymFile::Sym& s : f.syms()) {
            if (!SymFile::listed(s)) continue;
            if (have && s.value == last) {
                if (f.text_letter(s)) cur = &s, tagged = false;
                continue;
            }
            if (std::strcmp(s.name, "_fini") == 0) has_fini_ = true;
            if (cur) push(cur, tagged, last, s.value);
            have = true;
            last = s.value;
            cur = &s;
            tagged = true;
        }
        if (cur) push(cur, tagged, last, last);
        // pprof keeps routines in a hash by name: an untagged name met again replaces the
        // earlier routine of that name.
        std::unordered_map<std::string_view, size_t> seen;
        for (size_t i = 0; i < routines_.size(); ++i) {
            Routine& r = routines_[i];
            if (r.tagged) continue;
            auto [it, fresh] = seen.try_emplace(r.sym->name, i);
            if (!fresh) {
                routines_[it->second].dead = true;
                it->second = i;
            }
        }
        std::erase_if(routines_, [](const Routine& r) { return r.dead; });
    }

    bool empty() const { return routines_.empty(); }
    bool has_fini() const { return has_fini_; }

    struct Routine {
        uint64_t start, end;
        const SymFile::Sym* sym;
        bool tagged, dead;
    };

    // The routine pprof gives `addr` (the first one that ends after it), or nullptr.
    const Routine* find(uint64_t addr) const {
        auto it = std::partition_point(routines_.begin(), routines_.end(),
                                       [addr](const Routine& r) { return r.end <= addr; });
        return it == routines_.end() ? nullptr : &*it;
    }

    // pprof's full name of a routine: "name@@VER<0000000000001234>".
    static std::string full_name(const Routine* it) {
        std::string n = demangle(it->sym->name);
        if (it->sym->version) {
            n += it->sym->hidden_version ? "@" : "@@";
            n += it->sym->version;
        }
        if (it->tagged) {
            char buf[24];
            std::snprintf(buf, sizeof buf, "<%016llx>", static_cast<unsigned long long>(it->start));
            n += buf;
        }
        return n;
    }

private:
    void push(const SymFile::Sym* s, bool tagged, uint64_t start, uint64_t end) {
        if (!tagged && s->name[0] == '\0') return;  // pprof's /./ on an empty name
        routines_.push_back({start, end, s, tagged, false});
    }
    std::vector<Routine, PopulatedAllocator<Routine>> routines_;
    bool has_fini_ = false;
};

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

// What pprof's nm and addr2line know about one mapped file.
class PprofImage {
public:
    PprofImage(const std::string& path, const std::string& build_id) {
        std::string root = get_debug_root();
        image_ = path;
        if (!path.empty() && path[0] == '/') {
            if (regular_file(root + path))
                image_ = root + path;
            else if (regular_file(root + path + ".debug"))
                image_ = root + path + ".debug";
        }
        own_ = SymFile::load(image_, false);
        if (own_->syms().empty()) own_ = SymFile::load(image_, true);
        nm_ = NmTable(*own_);
        // addr2line: the image's DWARF, else the separate debug file's (and its .symtab).
        if ((dwarf_ = DwarfNames::open(image_))) return;
        std::vector<std::string> cands;
        if (build_id.size() > 2)
            cands.push_back(root + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) +
                            ".debug");
        if (std::string link = debuglink_of(image_); !link.empty()) {
            std::string dir = image_.substr(0, image_.rfind('/') + 1);
            cands.push_back(dir + link);
            cands.push_back(dir + ".debug/" + link);
            cands.push_back(root + dir + link);
        }
        for (const std::string& c : cands) {
            if (c == image_) continue;
            if ((dwarf_ = DwarfNames::open(c))) {
                debug_syms_ = SymFile::load(c, false);
                return;
            }
        }
    }

    // The name `pprof --symbols` prints for `addr` (link-time address; `pc` as mapped).
    std::string name(uint64_t addr, uint64_t pc) {
        std::string a2l = "??";
        const NmTable::Routine* r = nm_.empty() ? nullptr : nm_.find(addr);
        DwarfFunction inner, outer;
        if (dwarf_ && dwarf_->lookup(addr, &inner, &outer)) {
            // With -i, a first line `_fini` reads as pprof's separator: the address stays
            // unnamed. (pprof then also pairs the object's later addresses with the answers
            // of their predecessors; that slip is not reproduced.)
            if (nm_.has_fini() && !inner.linkage && inner.name == "_fini") return "??";
            const DwarfFunction& f = nm_.has_fini() ? outer : inner;
            if (!f.name.empty()) a2l = f.linkage ? demangle(f.name) : f.name;
        } else {
            SymFile& syms = debug_syms_ ? *debug_syms_ : *own_;
            if (const SymFile::Sym* s = syms.find_function(addr)) {
                if (nm_.has_fini() && std::strcmp(s->name, "_fini") == 0) return "??";
                // Both tools name the same symbol (the common case without DWARF): the nm form
                // "D@@VER<tag>" shortens to short(D)@@VER, and is taken when it starts with
                // short(D), i.e. when D does. One demangling and one shortening.
                if (r && std::strcmp(r->sym->name, s->name) == 0) {
                    std::string d = demangle(s->name);
                    std::string f = pprof_short_name(d);
                    if (r->sym->version && d.starts_with(f)) {
                        f += r->sym->hidden_version ? "@" : "@@";
                        f += r->sym->version;
                    }
                    return checked(std::move(f));
                }
                a2l = demangle(s->name);
            }
        }
        std::string func = a2l == "??" ? a2l : pprof_short_name(a2l);
        if (!nm_.empty()) {
            std::string nm;
            if (r) {
                nm = NmTable::full_name(r);
            } else {
                char buf[24];
                std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(pc));
                nm = buf;
            }
            if (a2l == "??" || nm.starts_with(func)) func = r ? pprof_short_name(nm) : nm;
        }
        return checked(std::move(func));
    }

private:
    static std::string checked(std::string func) {
        if (func.empty() || (func.size() == 1 && func[0] == '0')) return "??";  // PrintSymbols' `|| "??"`
        return func;
    }

    std::string image_;
    std::unique_ptr<SymFile> own_, debug_syms_;
    NmTable nm_;
    std::unique_ptr<DwarfNames> dwarf_;
};

}  // namespace

std::string pprof_short_name(std::string s) {
    if (s.find_first_of("(<> \t\n\r\f\v") == std::string::npos) return s;  // a C name
    strip_groups(s, '(', ')', true);                                       // argument types (and `const`)
    if (!s.empty() && s.back() == '>') {                                   // a trailing <hexaddress>
        size_t lt = s.rfind('<');
        bool hex = lt != std::string::npos;
        for (size_t i = lt + 1; hex && i + 1 < s.size(); ++i)
            hex = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
        if (hex) s.erase(lt);
    }
    strip_groups(s, '<', '>', false);  // template arguments
    // A leading return type: keep from the last `\s+\w+::`.
    for (size_t i = s.size(); i-- > 1;) {
        if (!perl_space(s[i - 1]) || !perl_word(s[i])) continue;
        size_t j = i;
        while (j < s.size() && perl_word(s[j])) ++j;
        if (s.compare(j, 2, "::") == 0) {
            s.erase(0, i);
            break;
        }
    }
    return s;
}

std::string pprof_symbols(std::string_view input, const std::string& binary) {
    static const std::string unknown = "??";
    std::string out;
    try {
        // The maps table: every line up to the first one that is not a complete maps line.
        size_t pos = 0, table_end = 0;
        while (pos < input.size()) {
            size_t start = pos;
            MapsLine m;
            if (!parse_maps_line(core::next_line(input, pos), m)) {
                pos = start;
                break;
            }
            table_end = pos > input.size() ? input.size() : pos;
        }

        // The requests, in input order: an address (index into `addrs`), a bad address line,
        // or a name to look up in BINARY.
        struct Req {
            enum Kind : uint8_t { Addr, BadAddr, Name } kind;
            uint64_t addr = 0;
            std::string_view name;
        };
        std::vector<Req> reqs;
        std::vector<uint64_t> addrs;
        if (pos > input.size()) pos = input.size();
        reqs.reserve((input.size() - pos) / 12 + 1);  // "0x7f..." lines are ~15 bytes
        addrs.reserve(reqs.capacity());
        while (pos < input.size()) {
            std::string_view line = trim(core::next_line(input, pos));
            if (line.empty()) continue;
            if (line.size() >= 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X')) {
                uint64_t addr;
                if (core::parse_hex(line.substr(2), addr)) {
                    reqs.push_back({Req::Addr, addr, {}});
                    addrs.push_back(addr);
                } else {
                    reqs.push_back({Req::BadAddr, 0, {}});
                }
            } else {
                reqs.push_back({Req::Name, 0, line});
            }
        }

        // Resolve each distinct address once, in address order: the lookups of one DSO come
        // together and walk its symbol table forwards.
        std::sort(addrs.begin(), addrs.end());
        addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
        std::vector<const std::string*> names(addrs.size(), &unknown);
        try {
            Syms syms(input.substr(0, table_end), 0);
            std::unordered_map<Object*, std::unique_ptr<PprofImage>> images;
            std::deque<std::string> found;  // a deque: the pointers in `names` stay valid
            for (size_t i = 0; i < addrs.size(); ++i) {
                Object* obj = nullptr;
                uint64_t obj_addr = 0;
                if (!syms.locate(addrs[i], &obj, &obj_addr) || obj->path().empty() || obj->path()[0] != '/')
                    continue;
                auto& img = images[obj];
                if (!img) img = std::make_unique<PprofImage>(obj->path(), obj->build_id());
                found.push_back(img->name(obj_addr, addrs[i]));
                names[i] = &found.back();
            }

            std::shared_ptr<Object> bin;
            bool bin_tried = false;
            for (const Req& r : reqs) {
                if (r.kind == Req::Name) {
                    if (!bin_tried) {
                        bin_tried = true;
                        // A FIFO or device named as BINARY would block open() or read().
                        struct stat st;
                        if (::stat(binary.c_str(), &st) == 0 && S_ISREG(st.st_mode)) bin = get_object(binary);
                    }
                    uint64_t off = bin ? bin->file_offset(r.name) : 0;
                    if (off) {
                        char buf[24];
                        std::snprintf(buf, sizeof buf, "0x%llx\n", static_cast<unsigned long long>(off));
                        out += buf;
                    }
                    continue;
                }
                const std::string* n = &unknown;
                if (r.kind == Req::Addr)
                    n = names[static_cast<size_t>(std::lower_bound(addrs.begin(), addrs.end(), r.addr) -
                                                  addrs.begin())];
                out += *n;
                out += '\n';
            }
            return out;
        } catch (...) {
        }
        // Something failed on the way (memory): still one line per address line, in order.
        out.clear();
        for (const Req& r : reqs)
            if (r.kind != Req::Name) out += "??\n";
    } catch (...) {
    }
    return out;
}

int run_pprof_symbols(const std::string& binary) {
    std::signal(SIGPIPE, SIG_IGN);
    std::string in;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
    }
    std::string out = pprof_symbols(in, binary);
    size_t done = 0;
    while (done < out.size()) {
        ssize_t n = ::write(1, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    return 0;
}

}  // namespace perfprof::sym
