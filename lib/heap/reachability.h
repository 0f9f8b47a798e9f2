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

// How the allocator lays out its blocks, as far as the scan must know.
enum class HeapLayout {
    // No inline metadata the scan must tell from the blocks (tcmalloc, jemalloc, mimalloc).
    Plain,
    // glibc: a block of n bytes lies in a chunk of max(32, align16(n + 8)) bytes that starts
    // 16 bytes before it, and the next chunk's header follows. When n % 16 is 1 to 8 that
    // header's first word (prev_size) lies inside the block, so the allocator's own pointers
    // to the next chunk (the arena's top, its bins, a free chunk's links) are no pointers into
    // the block: counted as such, they made leaked blocks of those sizes reachable. And the
    // chunk's slack after the n bytes holds stale data of earlier blocks: no root.
    Glibc,
};

// Marks `blocks` (sorted by addr, not overlapping) reachable from `roots`; returns one flag
// per block. The roots leave out the blocks and `free_memory` (freed blocks, whose stale
// contents point anywhere). Pure: memory comes through `read`. A block is reachable when a
// word points to its start or inside it: valgrind's "definitely lost" and "indirectly lost"
// blocks are the others (its "possibly lost" ones, reached through inner pointers only, are
// reachable here).
std::vector<bool> mark_reachable(const std::vector<Block>& blocks, const std::vector<Region>& roots,
                                 const ReadMemory& read, std::vector<Block> free_memory = {},
                                 HeapLayout layout = HeapLayout::Glibc);

// The roots of stopped process `pid`: its readable and writable mappings but the kernel's own
// ([vvar], [vsyscall]). A mapping holding a thread's stack pointer (from
// /proc/PID/task/TID/syscall) starts there, less the 128-byte red zone: what lies below is
// dead. `extra_sp`, when not 0, is a stack pointer at a function's entry (exit()'s, where the
// process was stopped): its mapping starts exactly there, since the caller's red zone is dead
// across a call, and the frames below, of calls that returned (malloc's among them), hold
// stale copies of pointers the program has dropped.
std::vector<Region> process_roots(int pid, uint64_t extra_sp);

// Reads process `pid`'s memory (/proc/PID/mem); the process should be stopped.
ReadMemory process_memory(int pid);

}  // namespace perfprof::heap
