// The symbolizer of a session (blazesym's shape): an object one creates, asks in batches, and
// that caches per process and evicts when told. It owns what symbolization needs: the objects
// (shared across processes by build-id), each process's mappings, the kernel's table, and the
// settings (debug root, verbosity). Side-band records reach it through mmap()/exec()/exit();
// outputs holding chains to symbolize later register as ProcessObservers and fold them
// before a process's symbols go.
//
// Not thread-safe: one Symbolizer per thread of symbolization (a session, a serve job).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sym/jit_map.h"
#include "sym/kallsyms.h"
#include "sym/object_cache.h"
#include "sym/syms.h"
#include "unwind/code_locator.h"

namespace perfprof::sym {

// An output holding a process's chains unsymbolized (flame graph, pprof).
class ProcessObserver {
public:
    // The symbols of `tgid` are about to be dropped (exit, exec): symbolize what is pending.
    virtual void before_forget(uint32_t tgid) = 0;

protected:
    ~ProcessObserver() = default;
};

class Symbolizer final : public unwind::CodeLocator {
public:
    struct Settings {
        std::string debug_root = kDefaultDebugRoot;  // separate debug files (§5.4.3)
        // >= 1 (-v): one line on `log` per (object, reason) saying why frames are unknown. On
        // stdout, as every -v note of perf-prof (wildcard expansions, unwinding statistics):
        // stderr stays for real problems, and a -v run prints nothing there either.
        int verbose = 0;
        FILE* log = stdout;
    };
    Symbolizer() : Symbolizer(Settings{}) {}
    explicit Symbolizer(Settings settings);
    Symbolizer(const Symbolizer&) = delete;
    Symbolizer& operator=(const Symbolizer&) = delete;
    ~Symbolizer();

    // out[i] for ips[i] of process `pid` (user addresses); out.size() >= ips.size(). A frame
    // without a name says why in Frame::reason. An address no file mapping holds (anonymous
    // code) is looked up in the process's JIT map, /tmp/perf-PID.map (Frame::jit).
    void symbolize(uint32_t pid, std::span<const uint64_t> ips, std::span<Frame> out);
    // One address: false when no mapping holds it (out.reason NoMapping).
    bool resolve(uint32_t pid, uint64_t ip, Frame& out);
    // The kernel's table, read on first use and kept for the symbolizer's life.
    std::shared_ptr<Kallsyms> kernel();

    // The object mapped at `pc` and `pc` in its address space (pprof's --symbols, unwinding).
    bool locate_object(int tgid, uint64_t pc, Object** obj, uint64_t* obj_addr);
    bool locate(int tgid, uint64_t pc, unwind::CfiTable** table, uint64_t* obj_pc) override;
    // Reads `pid`'s maps now, while it lives: its chains are symbolized later.
    void prepare(uint32_t pid);

    // Side band (PERF_RECORD_MMAP2, COMM with exec, EXIT): a new executable mapping; an exec
    // (the old image's symbols go, the new one's come by mmap()); the process is gone.
    void mmap(uint32_t pid, const MapsLine& m);
    void exec(uint32_t pid);
    void exit(uint32_t pid);
    // Observers fold their chains of `pid`, then its symbols are dropped (exit and exec).
    void forget(uint32_t pid);

    void add_observer(ProcessObserver* o);
    void remove_observer(ProcessObserver* o);

    ObjectCache& objects() { return objects_; }
    SymsCache& processes() { return processes_; }
    const Settings& settings() const { return settings_; }
    // SIGUSR2 statistics (SPEC §5.5): the objects, then each process's mappings.
    void dump(FILE* out) const;

private:
    // With -v, says once per (object, reason) why its frames are unknown.
    void note_unknown(uint32_t pid, const Frame& f);
    // The process's JIT map, made (its ids read, no file yet) on first use.
    JitMap& jit_map(uint32_t pid);
    bool resolve_jit(uint32_t pid, uint64_t ip, Frame& out);

    Settings settings_;
    ObjectCache objects_;
    SymsCache processes_;
    std::shared_ptr<Kallsyms> kernel_;
    std::vector<ProcessObserver*> observers_;
    std::unordered_map<uint32_t, std::unique_ptr<JitMap>> jit_;
    std::set<std::pair<std::string, UnknownReason>> told_;  // note_unknown's lines so far
};

}  // namespace perfprof::sym
