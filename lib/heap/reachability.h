// Which heap blocks a stopped process can still reach (kmemleak --user): a conservative mark
// from the roots, as the gperftools heap checker and valgrind's leak check do. Roots are the
// process's writable memory outside the tracked blocks (data, bss, stacks, untracked heap);
// any aligned word that points into a block (its start or inside it) makes the block
// reachable, and a reachable block's contents are roots too. A block nothing points to is
// leaked (valgrind's "definitely lost", or "indirectly lost" when only leaked blocks point
// to it).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace perfprof::heap {

struct Block {
    uint64_t addr = 0, size = 0;
};

// Where the scan reads memory: fills `buf` with `len` bytes at `addr`; false if unreadable.
using ReadMemory = std::function<bool(uint64_t addr, void* buf, size_t len)>;

struct Region {
    uint64_t start = 0, end = 0;
};

// Marks `blocks` (sorted by addr, not overlapping) reachable from `roots`; returns one flag
// per block. The roots leave out the blocks and `free_memory` (freed blocks, whose stale
// contents point anywhere). Pure: memory comes through `read`.
std::vector<bool> mark_reachable(const std::vector<Block>& blocks, const std::vector<Region>& roots,
                                 const ReadMemory& read, std::vector<Block> free_memory = {});

// The roots of stopped process `pid`: its readable and writable mappings but the kernel's own
// ([vvar], [vsyscall]). A mapping holding a thread's stack pointer (from
// /proc/PID/task/TID/syscall, or `extra_sp` when not 0) starts there, less the 128-byte red
// zone: what lies below is dead.
std::vector<Region> process_roots(int pid, uint64_t extra_sp);

// Reads process `pid`'s memory (/proc/PID/mem); the process should be stopped.
ReadMemory process_memory(int pid);

}  // namespace perfprof::heap
