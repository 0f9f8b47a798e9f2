// The leaked-bytes report (SPEC §4.5.3 step 6), in the layout of the gperftools heap checker:
// shared by kmemleak on kernel allocators and by the heap profile of a process (--user).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stack/stack_printer.h"

namespace perfprof::heap {

struct CommTally {
    std::string comm;
    uint64_t bytes = 0, objects = 0;
};

// Allocations still outstanding that share one call chain.
struct LeakGroup {
    std::vector<uint64_t> chain;  // the raw perf call chain, context markers included
    uint64_t bytes = 0, objects = 0;
    uint32_t pid = 0;              // whose user symbols resolve the chain (0: kernel only)
    std::vector<CommTally> comms;  // --comm: per allocating task name
};

// The statistics block (SPEC §4.5.3 step 1): "{WALL(now)} ", "KMEMLEAK STATS:", with
// `alloc_list` §4.5.5's "ALLOC LIST num {objects} mem {bytes}" (SIGUSR1), and
// "TOTAL alloc {A} free {F}", each on its own line.
struct AllocList {
    uint64_t num = 0, mem = 0;
};
void append_stats(uint64_t total_alloc, uint64_t total_free, const AllocList* alloc_list, std::string& out);

// Sorts the groups (bytes descending, then pid ascending; each comm list by bytes, then objects,
// descending) and appends, per group:
//   Leak of {bytes} bytes in {objects} objects allocated from:
//       comms: {name}({bytes}/{objects}) ...        (only when `comms` is set)
//   {stack lines of printer.print()}
// `title` (e.g. "LEAKED BYTES REPORT:") is appended first, on its own line, when not empty;
// `lead` replaces "Leak of" (the in-use report of --user says "In use").
void append_leak_groups(std::vector<LeakGroup>& groups, stack::Printer& printer, bool comms,
                        const char* title, std::string& out, const char* lead = "Leak of");

}  // namespace perfprof::heap
