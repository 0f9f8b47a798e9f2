// Process symbols (SPEC §5.4.1 "process symbols" and "DSO entries", §5.4.2) and the per-tgid
// symbol cache. Layers 1-2 of syms_cache → syms → dso → object → sym.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sym/object.h"

namespace perfprof::sym {

class ObjectCache;

// Why a frame has no name (SPEC: per-item failures are data). None: it has one.
enum class UnknownReason : uint8_t {
    None,
    NoMapping,   // no executable mapping of the process holds the address
    NoSymbol,    // the object has symbols, none of them covers the address
    Stripped,    // the object has no full symbol table (.symtab) and no debug file
    Unreadable,  // the mapped file could not be opened or is not an ELF we can read
};
// "no mapping", "no symbol", "stripped", "unreadable file"; "" for None.
const char* reason_text(UnknownReason r);

// One resolved user address.
struct Frame {
    const std::string* sym = nullptr;  // demangled symbol name; nullptr if unknown
    uint64_t offset = 0;               // addr - symbol start
    const std::string* dso = nullptr;  // mapped file path (display form); nullptr if no mapping
    uint64_t dso_offset = 0;           // file offset of addr within the DSO (for [dso+0xOFF])
    // The rest is for outputs that describe mappings (pprof): the maps line holding addr, the
    // object it maps (nullptr unless a readable ELF), addr in the object's own address space
    // and the raw symbol (when `sym`).
    uint64_t map_start = 0, map_end = 0, map_offset = 0;
    Object* obj = nullptr;
    uint64_t obj_addr = 0;
    const Symbol* symbol = nullptr;
    UnknownReason reason = UnknownReason::None;  // why `sym` is null
    bool jit = false;  // named by the process's JIT map (sym/jit_map.h); dso is the map file
};

// One line of /proc/PID/maps, parsed. Returns false if the line is not a maps line with all
// of START-END PERMS OFFSET MAJ:MIN INODE (PATH may be empty).
struct MapsLine {
    uint64_t start = 0, end = 0, offset = 0;
    std::string perms, path;
    uint32_t dev_major = 0, dev_minor = 0;
    uint64_t inode = 0;
};
bool parse_maps_line(std::string_view line, MapsLine& out);

// The executable file-backed mappings of one process, merged per path into DSOs.
class Syms {
public:
    // From maps text. `pid` > 0: files are opened through /proc/PID/root, "(deleted)" is
    // rewritten to /proc/PID/exe when it is the executable (§5.4.1), [vdso] is read from the
    // process; pid 0: paths are opened as they are (the --symbols service).
    // Objects come from `objects`, which must outlive this.
    Syms(std::string_view maps_text, int pid, ObjectCache& objects);
    // Resolves a user address (§5.4.2 with start <= addr < end). False if no DSO contains it;
    // a frame without a symbol says why in out.reason.
    bool resolve(uint64_t addr, Frame& out);
    // resolve() without the symbol lookup: the object mapped at `addr` and `addr` in the
    // object's own address space (§5.4.2 steps 1-2). False if no DSO contains it or its file
    // is not a readable ELF. For --symbols, which names addresses the way pprof does (§6).
    bool locate(uint64_t addr, Object** obj, uint64_t* obj_addr);
    size_t dso_count() const;
    // True if any mapping of the maps text (executable or not) contains addr.
    bool mapped(uint64_t addr) const;
    // One more mapping (a PERF_RECORD_MMAP2), replacing what it overlaps.
    void add(const MapsLine& m);
    // The DSO list, for SIGUSR2 (SPEC §5.5).
    void dump(FILE* out) const;

private:
    struct Dso {
        std::string path;       // display path
        std::string open_path;  // what is opened (empty = path)
        bool vdso = false;
        bool loaded = false;
        uint64_t vdso_start = 0, vdso_len = 0;
        std::shared_ptr<Object> obj;
    };
    struct Range {
        uint64_t start, end, file_offset;
        uint32_t dso;
    };
    Object* load(Dso& d);
    bool add_line(const MapsLine& m);  // unsorted append

    std::unordered_map<std::string, uint32_t> by_path_;
    std::string exe_target_;
    bool exe_read_ = false;

    int pid_;
    ObjectCache& objects_;
    std::vector<Dso> dsos_;
    std::vector<Range> ranges_;                            // executable, sorted by start
    std::vector<std::pair<uint64_t, uint64_t>> all_maps_;  // every mapping, sorted
};

// tgid → Syms, created on the first lookup from /proc/TGID/maps, re-read once on a miss in
// an unknown mapping (dlopen), dropped when the process exits.
class SymsCache {
public:
    // Objects come from `objects`, which must outlive the cache.
    explicit SymsCache(ObjectCache& objects) : objects_(objects) {}
    // Resolves `addr` of process `tgid`; false (out.reason NoMapping) if no mapping holds it.
    bool resolve(int tgid, uint64_t addr, Frame& out);
    // Syms::locate for the process, with resolve()'s re-read of the maps on a miss (dlopen).
    bool locate(int tgid, uint64_t addr, Object** obj, uint64_t* obj_addr);
    // Reads the process's maps now if they are not known yet, so that its addresses still
    // resolve after it exits (symbolization deferred to the end of a run).
    void touch(int tgid);
    // The process has exec'd or exited: /proc/TGID/maps no longer describes the addresses
    // still to be resolved, so a miss does not re-read it (until drop()).
    void freeze(int tgid);
    void drop(int tgid);
    size_t size() const;
    // A mapping reported by the kernel as it happened: the process may be gone by the time
    // its samples are printed, and /proc/PID/maps with it.
    void add_mapping(int tgid, const MapsLine& m);
    // The process has just exec'd (after drop()): its new image's mappings will all be
    // reported by add_mapping, so it starts from none instead of a read of /proc/TGID/maps
    // (every exec on the machine would otherwise cost one; a miss still re-reads it).
    void exec_image(int tgid);
    void dump(FILE* out) const;

private:
    struct Entry {
        std::string maps;                         // the text the newest Syms was built from
        std::vector<std::unique_ptr<Syms>> gens;  // older generations keep Frame pointers valid
        std::unordered_set<uint64_t> misses;      // pages that missed after a re-read
        bool frozen = false;                      // no re-reads (freeze)
    };
    // The process's entry, made from /proc/TGID/maps on first use.
    Entry& entry(int tgid);
    // fn(Syms&) on the newest maps, then once more on a fresh read of them after a miss.
    template <class Fn>
    bool lookup(int tgid, uint64_t addr, Fn&& fn);
    ObjectCache& objects_;
    std::unordered_map<int, Entry> map_;
};

}  // namespace perfprof::sym
