// The global task-name table (SPEC §3.7): every task found in /proc at start, kept current
// by a side-band event on every CPU (PERF_RECORD_COMM / FORK / EXIT), with exited tasks
// kept until garbage-collected so short-lived tasks seen in samples still resolve.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perf/event_list.h"
#include "perf/ring.h"

namespace perfprof::perf {

class CommTable {
public:
    // Starts the side-band event (when `live`) and reads /proc.
    explicit CommTable(bool live = true);

    // The name of `tid`, consulting the side band and /proc on a miss; nullopt if unknown.
    std::optional<std::string_view> find(uint32_t tid);
    // Sets a name as of perf time `time` (0: from /proc). The side band is read one CPU at
    // a time, so records arrive out of order: an older record never overwrites a newer name.
    void set(uint32_t tid, std::string_view name, uint64_t time = 0);

    // Processes pending side-band records.
    void drain();
    // One side-band record (COMM, FORK, EXIT, MMAP2 with TID|TIME sample ids), as drain()
    // applies them; public for tests.
    void record(const perf_event_header& h);
    // Forgets tasks that exited more than `keep_ns` before the newest side-band time, and
    // tells `forget` (if set) each id it drops, so per-process caches can follow (SPEC §5.5).
    void gc(uint64_t keep_ns);
    std::function<void(uint32_t tid)> forget;
    // Executable mappings (PERF_RECORD_MMAP2) and execs as they happen, in time order with
    // the names, so symbols of short-lived processes resolve after they are gone.
    struct Mapping {
        uint32_t pid;
        uint64_t start, len, pgoff;
        uint32_t maj, min;
        uint64_t ino;
        uint32_t prot;
        std::string_view path;
    };
    std::function<void(const Mapping&)> on_mmap;
    std::function<void(uint32_t pid)> on_exec;
    // The side-band ring fds, for the event loop (drain() on readiness).
    std::vector<int> fds() const;
    size_t size() const { return names_.size(); }

private:
    struct Entry {
        char name[16];
        uint64_t time = 0;       // of the record that set the name
        uint64_t exit_time = 0;  // 0 = alive
        uint32_t parent = 0;     // the name was inherited from this task at fork (time)
    };
    void scan_proc();

    std::unordered_map<uint32_t, Entry> names_;
    std::unordered_map<uint32_t, std::vector<uint32_t>> children_;  // parent → forks that took its name
    EventList events_;
    std::vector<MappedRing> rings_;
    uint64_t newest_ = 0;
    std::vector<uint64_t> pending_;  // one drain's records: [time, record words...]
    std::vector<size_t> offsets_;
};

}  // namespace perfprof::perf
