// DWARF function names through libdw. The CU of an address comes from .debug_aranges
// (dwarf_addrdie); CUs that aranges omit are found through a table of every CU's ranges, built
// once on the first miss. Names follow DW_AT_abstract_origin/DW_AT_specification
// (dwarf_attr_integrate), as addr2line does for inlined instances and out-of-line clones.
#include "sym/dwarf_names.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "core/fd.h"
#include "sym/debuginfod.h"
#include "sym/object.h"

namespace perfprof::sym {

namespace {

int end_dwarf(Dwarf* d) {
    return dwarf_end(d);
}
using DwarfPtr = core::CPtr<Dwarf, end_dwarf>;
using ElfPtr = core::CPtr<Elf, elf_end>;

bool is_function(int tag) {
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

DwarfFunction describe(Dwarf_Die* die) {
    DwarfFunction f;
    Dwarf_Attribute a;
    const char* s = nullptr;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
        s = dwarf_formstring(&a);
    if (s && *s) {
        f.name = s;
        f.linkage = true;
    } else if (dwarf_attr_integrate(die, DW_AT_name, &a) && (s = dwarf_formstring(&a))) {
        f.name = s;
    }
    Dwarf_Addr base = 0, start = 0, end = 0;
    if (dwarf_ranges(die, 0, &base, &start, &end) > 0) f.entry = start;
    return f;
}

}  // namespace

struct DwarfNames::Impl {
    core::Fd fd;
    DwarfPtr dw;
    bool cu_table_built = false;
    struct CuRange {
        uint64_t start, end;
        Dwarf_Off off;
    };
    std::vector<CuRange> cus;  // sorted by start; only used when aranges miss an address

    // Every function instance (subprogram, inlined subroutine) of one CU with code, one entry
    // per address range, read once per CU: walking the DIE tree for each address
    // (dwarf_getscopes) costs ~40 us per address on libc.
    struct Fn {
        uint64_t start, end;
        Dwarf_Off off;
        uint32_t depth, order;
    };
    struct CuTable {
        std::vector<Fn> fns;  // sorted by start
    };
    std::unordered_map<Dwarf_Off, CuTable> tables;

    static bool may_hold_code(int tag) {
        switch (tag) {
            case DW_TAG_subprogram:
            case DW_TAG_inlined_subroutine:
            case DW_TAG_lexical_block:
            case DW_TAG_namespace:
            case DW_TAG_module:
            case DW_TAG_try_block:
            case DW_TAG_catch_block:
            case DW_TAG_class_type:
            case DW_TAG_structure_type:
            case DW_TAG_union_type:
                return true;
            default:
                return false;
        }
    }

    void walk(Dwarf_Die* parent, uint32_t depth, CuTable& t, uint32_t& order) {
        Dwarf_Die child;
        if (depth > 256 || dwarf_child(parent, &child) != 0) return;
        do {
            int tag = dwarf_tag(&child);
            if (!may_hold_code(tag)) continue;
            uint32_t d = depth;
            if (is_function(tag)) {
                Dwarf_Addr base = 0, s = 0, e = 0;
                ptrdiff_t o = 0;
                bool any = false;
                uint32_t ord = order++;
                while ((o = dwarf_ranges(&child, o, &base, &s, &e)) > 0)
                    if (e > s) {
                        t.fns.push_back({s, e, dwarf_dieoffset(&child), depth, ord});
                        any = true;
                    }
                if (!any) continue;  // a declaration or an abstract instance: no code below
                d = depth + 1;
            }
            walk(&child, d, t, order);
        } while (dwarf_siblingof(&child, &child) == 0);
    }

    const CuTable& table(Dwarf_Die* cu) {
        auto [it, fresh] = tables.try_emplace(dwarf_dieoffset(cu));
        if (fresh) {
            uint32_t order = 0;
            walk(cu, 0, it->second, order);
            std::stable_sort(it->second.fns.begin(), it->second.fns.end(),
                             [](const Fn& a, const Fn& b) { return a.start < b.start; });
        }
        return it->second;
    }

    void build_cu_table() {
        cu_table_built = true;
        Dwarf_Off off = 0, next = 0;
        size_t hsize = 0;
        while (dwarf_nextcu(dw.get(), off, &next, &hsize, nullptr, nullptr, nullptr) == 0) {
            Dwarf_Die cu;
            if (dwarf_offdie(dw.get(), off + hsize, &cu)) {
                Dwarf_Addr base = 0, s = 0, e = 0;
                ptrdiff_t o = 0;
                while ((o = dwarf_ranges(&cu, o, &base, &s, &e)) > 0)
                    if (e > s) cus.push_back({s, e, off + hsize});
            }
            off = next;
        }
        std::sort(cus.begin(), cus.end(),
                  [](const CuRange& a, const CuRange& b) { return a.start < b.start; });
    }

    bool cu_of(uint64_t addr, Dwarf_Die* out) {
        if (dwarf_addrdie(dw.get(), addr, out)) return true;
        if (!cu_table_built) build_cu_table();
        auto it = std::upper_bound(cus.begin(), cus.end(), addr,
                                   [](uint64_t a, const CuRange& r) { return a < r.start; });
        // Ranges of different CUs may nest (rarely): look back over a few candidates.
        for (int n = 0; it != cus.begin() && n < 8; ++n) {
            --it;
            if (addr < it->end && dwarf_offdie(dw.get(), it->off, out)) return true;
        }
        return false;
    }
};

DwarfNames::~DwarfNames() = default;

bool has_debug_info(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return false;
    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return false;
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
    if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return false;
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf.get(), &shstrndx) != 0) return false;
    for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0) continue;
        const char* n = elf_strptr(elf.get(), shstrndx, sh.sh_name);
        if (n && (std::strcmp(n, ".debug_info") == 0 || std::strcmp(n, ".zdebug_info") == 0)) return true;
    }
    return false;
}

std::unique_ptr<DwarfNames> DwarfNames::open(const std::string& path, const std::function<void()>& found) {
    if (!has_debug_info(path)) return nullptr;
    if (found) found();
    auto impl = std::make_unique<Impl>();
    impl->fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!impl->fd) return nullptr;
    impl->dw.reset(dwarf_begin(impl->fd.get(), DWARF_C_READ));
    if (!impl->dw) return nullptr;
    std::unique_ptr<DwarfNames> d(new DwarfNames);
    d->impl_ = std::move(impl);
    return d;
}

bool DwarfNames::lookup(uint64_t addr, DwarfFunction* inner, DwarfFunction* outer) {
    Dwarf_Die cu;
    if (!impl_->cu_of(addr, &cu)) return false;
    const Impl::CuTable& t = impl_->table(&cu);
    // The deepest function instance containing addr (the innermost inlined one), and the
    // shallowest (the out-of-line function); at equal depth the last in DIE order.
    const Impl::Fn *in = nullptr, *out = nullptr;
    auto end = std::upper_bound(t.fns.begin(), t.fns.end(), addr,
                                [](uint64_t a, const Impl::Fn& f) { return a < f.start; });
    for (auto it = t.fns.begin(); it != end; ++it) {
        if (addr >= it->end) continue;
        if (!in || it->depth > in->depth || (it->depth == in->depth && it->order > in->order)) in = &*it;
        if (!out || it->depth < out->depth || (it->depth == out->depth && it->order > out->order)) out = &*it;
    }
    if (!in) return false;
    Dwarf_Die die;
    if (inner) {
        if (!dwarf_offdie(impl_->dw.get(), in->off, &die)) return false;
        *inner = describe(&die);
    }
    if (outer) {
        if (!dwarf_offdie(impl_->dw.get(), out->off, &die)) return false;
        *outer = describe(&die);
    }
    return true;
}

bool DwarfNames::source_line(uint64_t addr, std::string* file, int* line) {
    Dwarf_Die cu;
    if (!impl_->cu_of(addr, &cu)) return false;
    const Impl::CuTable& t = impl_->table(&cu);
    auto end = std::upper_bound(t.fns.begin(), t.fns.end(), addr,
                                [](uint64_t a, const Impl::Fn& f) { return a < f.start; });
    // The out-of-line function (shallowest instance), then the inlined call one level below it.
    const Impl::Fn *out = nullptr, *call = nullptr;
    for (auto it = t.fns.begin(); it != end; ++it)
        if (addr < it->end && (!out || it->depth < out->depth)) out = &*it;
    for (auto it = t.fns.begin(); out && it != end; ++it)
        if (addr < it->end && it->depth == out->depth + 1) call = &*it;
    Dwarf_Word ln = 0;
    const char* src = nullptr;
    Dwarf_Die die;
    Dwarf_Attribute a;
    if (call && dwarf_offdie(impl_->dw.get(), call->off, &die)) {
        Dwarf_Word idx = 0;
        Dwarf_Files* files = nullptr;
        size_t nfiles = 0;
        if (dwarf_attr(&die, DW_AT_call_line, &a)) dwarf_formudata(&a, &ln);
        if (dwarf_attr(&die, DW_AT_call_file, &a) && dwarf_formudata(&a, &idx) == 0 &&
            dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && idx < nfiles)
            src = dwarf_filesrc(files, idx, nullptr, nullptr);
    } else if (Dwarf_Line* l = dwarf_getsrc_die(&cu, addr)) {
        int n = 0;
        if (dwarf_lineno(l, &n) == 0 && n > 0) ln = Dwarf_Word(n);
        src = dwarf_linesrc(l, nullptr, nullptr);
    }
    if (ln == 0 || ln > INT32_MAX) return false;
    *line = int(ln);
    if (file) *file = src ? src : "";
    return true;
}

std::string DwarfNames::build_id() const {
    Elf* elf = dwarf_getelf(impl_->dw.get());
    return elf ? read_build_id(elf) : std::string();
}

std::unique_ptr<DwarfNames> open_dwarf_of(const Object& obj) {
    const std::string& id = obj.build_id();
    std::vector<std::string> cands{obj.path()};
    if (id.size() > 2)
        cands.push_back(obj.debug_root() + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
    // What a debuginfod server gave for the object's symbols (never a new request here).
    if (std::string remote = Debuginfod::process().known(id); !remote.empty()) cands.push_back(remote);
    for (const std::string& c : cands) {
        if (c.empty() || c[0] != '/') continue;  // [vdso] and the like: no file to read
        std::unique_ptr<DwarfNames> d = DwarfNames::open(c);
        if (d && (id.empty() || d->build_id() == id)) return d;
    }
    return nullptr;
}

}  // namespace perfprof::sym
