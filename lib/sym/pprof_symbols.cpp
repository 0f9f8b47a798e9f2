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
// Finally pprof's ShortFunctionName. The two tools' views of one file are PprofImage
// (pprof_image.cpp).
//
// Beyond pprof's view: where pprof names nothing (`??`, or the bare `0x%016x` past nm's last
// routine), e.g. a stripped file whose functions are only in MiniDebugInfo (.gnu_debugdata) or
// in a separate debug file without DWARF, the object layer's symbol table (lib/sym/object,
// SPEC §5.4.3) answers instead, shortened the same way. Everywhere pprof names an address the
// answer is pprof's. The object's table is read only when one of its addresses needs it.
//
// Speed (SPEC §6, issue: 10,000 libLLVM addresses in <= 26 ms from process start to exit):
// the symbol and string tables are mapped, not copied; tables are sorted as packed keys by
// radix; each distinct address is resolved once, in address order, by galloping from the
// previous answer; large batches use a thread per CPU; and the heap is made resident in one
// call up front, since a first-touch page fault costs ~10 us on VMs.
#include "sym/pprof_symbols.h"

#include "sym/file_block.h"

#include "core/text.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/radix_sort.h"
#include "core/work_pool.h"
#include "sym/debuginfod.h"
#include "sym/kallsyms.h"
#include "sym/object.h"
#include "sym/object_cache.h"
#include "sym/pprof_image.h"
#include "sym/symbolizer.h"
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
    if (balanced && depth == 0) {  // in place: what is kept moves left
        size_t w = 0;
        for (size_t i = 0; i < s.size();) {
            if (s[i] != open) {
                s[w++] = s[i++];
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
        s.resize(w);
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

// Whether pprof's answer `n` for `pc` names nothing: `??`, or the bare address nm's view gives
// past its last routine when addr2line knows nothing either.
bool unnamed(const std::string& n, uint64_t pc) {
    if (n == "??") return true;
    if (n.size() != 18 || n[0] != '0' || n[1] != 'x') return false;
    uint64_t v;
    return core::parse_hex(std::string_view(n).substr(2), v) && v == pc;
}

// Beyond pprof's view: an address pprof leaves unnamed gets the function that the object
// layer's full sources hold (MiniDebugInfo, the separate debug file by build-id or
// .gnu_debuglink; SPEC §5.4.3), shortened as pprof would. The object's table is loaded on the
// first such address (once per object, shared by the workers); runs of addresses in one
// function reuse the last answer.
struct Fallback {
    const Symbol* last = nullptr;
    std::string last_name;

    void name(Object& obj, uint64_t addr, std::string& out) {
        const Symbol* s = obj.find(addr);
        if (!s) return;
        if (s != last) {
            last = s;
            last_name = pprof_short_name(demangle(s->name));
        }
        if (!last_name.empty()) out = last_name;
    }
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

namespace {

// The requests, in input order: an address (its value, later its index in `addrs`), a
// bad address line, or a name to look up in BINARY.
struct Req {
    enum Kind : uint8_t { Addr, BadAddr, Name } kind;
    uint64_t addr = 0;
    std::string_view name;
};
struct Pending {
    uint64_t addr;
    size_t req;
};

// The maps table at the start of `input` (its end is returned), then the requests after it.
size_t parse_requests(std::string_view input, std::vector<Req>& reqs, std::vector<Pending>& pending) {
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

    if (pos > input.size()) pos = input.size();
    reqs.reserve((input.size() - pos) / 12 + 1);  // "0x7f..." lines are ~15 bytes
    pending.reserve(reqs.capacity());
    while (pos < input.size()) {
        std::string_view line = trim(core::next_line(input, pos));
        if (line.empty()) continue;
        if (line.size() >= 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X')) {
            uint64_t addr;
            if (core::parse_hex(line.substr(2), addr)) {
                reqs.push_back({Req::Addr, addr, {}});
                pending.push_back({addr, reqs.size() - 1});
            } else {
                reqs.push_back({Req::BadAddr, 0, {}});
            }
        } else {
            reqs.push_back({Req::Name, 0, line});
        }
    }
    return table_end;
}

// names[i]: the name of addrs[i] (ascending, distinct) in the maps table `maps`, "" if none.
void name_addresses(std::string_view maps, const std::vector<uint64_t>& addrs, core::WorkPool& pool,
                    const SymbolsRun& run, std::vector<std::string>& names) {
    ObjectCache cache(run.debug_root);
    Syms syms(maps, 0, cache);
    Debuginfod::process();  // its first use sets the environment: before the workers run
    // The image of each address (an index into `objs`), and the address in it.
    constexpr uint32_t kNone = ~uint32_t{0};
    std::vector<Object*> objs;
    std::vector<uint32_t> img_of(addrs.size(), kNone);
    std::vector<uint64_t> obj_addrs(addrs.size());
    std::unordered_map<Object*, uint32_t> index;
    for (size_t i = 0; i < addrs.size(); ++i) {
        Object* obj = nullptr;
        if (!syms.locate(addrs[i], &obj, &obj_addrs[i]) || obj->path().empty() || obj->path()[0] != '/')
            continue;
        auto [it, fresh] = index.try_emplace(obj, static_cast<uint32_t>(objs.size()));
        if (fresh) objs.push_back(obj);
        img_of[i] = it->second;
    }
    std::vector<std::unique_ptr<PprofImage>> images(objs.size());
    pool.run(objs.size(), [&](size_t k) {
        images[k] = std::make_unique<PprofImage>(objs[k]->path(), objs[k]->build_id(), run);
    });
    pool.run(2 * objs.size(), [&](size_t k) {
        if (k % 2)
            images[k / 2]->build_index();
        else
            images[k / 2]->build_nm();
    });
    // Work items: runs of consecutive addresses of one image. An image read through
    // libdw is one item (one thread at a time), first since it is the slowest; the others
    // are cut into pieces shared among the workers.
    struct Item {
        uint32_t image;
        std::vector<std::pair<size_t, size_t>> runs;
    };
    std::vector<Item> items;
    std::vector<size_t> dwarf_item(objs.size(), SIZE_MAX);
    const size_t piece = std::max<size_t>(256, addrs.size() / (pool.size() * 4u) + 1);
    for (size_t i = 0; i < addrs.size();) {
        size_t j = i + 1;
        while (j < addrs.size() && img_of[j] == img_of[i]) ++j;
        uint32_t k = img_of[i];
        if (k == kNone) {
        } else if (!images[k]->shared()) {
            if (dwarf_item[k] == SIZE_MAX) dwarf_item[k] = items.size(), items.push_back({k, {}});
            items[dwarf_item[k]].runs.emplace_back(i, j);
        } else {
            for (size_t b = i; b < j; b += piece) items.push_back({k, {{b, std::min(j, b + piece)}}});
        }
        i = j;
    }
    std::stable_partition(items.begin(), items.end(),
                          [&](const Item& it) { return !images[it.image]->shared(); });
    pool.run(items.size(), [&](size_t t) {
        PprofImage& img = *images[items[t].image];
        Object& obj = *objs[items[t].image];
        PprofImage::Cursor cur;
        Fallback fb;
        for (auto [b, e] : items[t].runs)
            for (size_t i = b; i < e; ++i) {
                names[i] = img.name(obj_addrs[i], addrs[i], cur);
                if (unnamed(names[i], addrs[i])) fb.name(obj, obj_addrs[i], names[i]);
            }
    });
#ifndef __SANITIZE_ADDRESS__  // (LeakSanitizer would report them)
    // Freeing the images piece by piece costs more than the kernel's unmapping at exit.
    if (run.batch)
        for (auto& img : images) (void)img.release();
#endif
}

// The answer: one line per address request, an offset line per name found in `binary`.
void write_answers(const std::vector<Req>& reqs, const std::vector<std::string>& names,
                   const std::string& binary, const SymbolsRun& run, std::string& out) {
    static const std::string unknown = "??";
    // The output, sized first.
    size_t size = 0;
    for (const Req& r : reqs)
        if (r.kind != Req::Name)
            size +=
                (r.kind == Req::Addr ? std::max(names[r.addr].size(), unknown.size()) : unknown.size()) + 1;
    out.reserve(size + 64);
    std::shared_ptr<Object> bin;
    bool bin_tried = false;
    for (const Req& r : reqs) {
        if (r.kind == Req::Name) {
            if (!bin_tried) {
                bin_tried = true;
                // A FIFO or device named as BINARY would block open() or read().
                struct stat st;
                if (::stat(binary.c_str(), &st) == 0 && S_ISREG(st.st_mode))
                    bin = get_object(binary, {}, run.debug_root);
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
        if (r.kind == Req::Addr && !names[r.addr].empty()) n = &names[r.addr];
        out += *n;
        out += '\n';
    }
}

}  // namespace

std::string pprof_symbols(std::string_view input, const std::string& binary, const SymbolsRun& run) {
    std::string out;
    try {
        std::vector<Req> reqs;
        std::vector<Pending> pending;
        const size_t table_end = parse_requests(input, reqs, pending);

        // Resolve each distinct address once, in address order: the lookups of one DSO come
        // together and walk its symbol table forwards. Large inputs on several threads.
        core::WorkPool pool(pending.size() < 1024 ? 1 : std::min(core::usable_cpus(), 8u),
                            [n = input.size(), batch = run.batch] {
                                if (batch) prefault_heap((size_t(1) << 20) + 3 * n);
                            });
        core::radix_sort_by(pending, [](const Pending& p) { return p.addr; });
        std::vector<uint64_t> addrs;  // distinct, ascending
        addrs.reserve(pending.size());
        for (const Pending& p : pending) {
            if (addrs.empty() || addrs.back() != p.addr) addrs.push_back(p.addr);
            reqs[p.req].addr = addrs.size() - 1;
        }
        std::vector<std::string> names(addrs.size());  // empty: unknown
        try {
            name_addresses(input.substr(0, table_end), addrs, pool, run, names);
            write_answers(reqs, names, binary, run, out);
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

std::string symbol_page(Symbolizer& symbols, int pid, std::string_view body) {
    std::string out;
    size_t pos = 0;
    while (pos < body.size()) {
        size_t end = body.find_first_of("+ \t\r\n", pos);
        if (end == std::string_view::npos) end = body.size();
        const std::string_view word = body.substr(pos, end - pos);
        pos = end + 1;
        uint64_t addr;
        if (word.size() < 3 || word[0] != '0' || (word[1] != 'x' && word[1] != 'X') ||
            !core::parse_hex(word.substr(2), addr))
            continue;
        const char* name = nullptr;
        Frame f;
        if (addr >> 63) {
            name = symbols.kernel()->find(addr);
        } else if (symbols.resolve(uint32_t(pid), addr, f) && f.sym) {
            name = f.sym->c_str();
        }
        if (!name) continue;
        char head[24];
        std::snprintf(head, sizeof head, "0x%llx\t", static_cast<unsigned long long>(addr));
        out += head;
        out += name;
        out += '\n';
    }
    return out;
}

int run_pprof_symbols(const std::string& binary) {
    std::signal(SIGPIPE, SIG_IGN);
    tune_heap_for_batch();
    SymbolsRun run;
    run.batch = true;
    prefault_heap(size_t(2) << 20);
    const std::string in = core::read_fd(0);
    // What the batch allocates grows with its lines (~15 input bytes an address): requests,
    // names, the output.
    prefault_heap((size_t(2) << 20) + 12 * in.size());
    core::write_all(1, pprof_symbols(in, binary, run));
    return 0;
}

}  // namespace perfprof::sym
