// Which allocator a process uses, and where to probe it (kmemleak --user): the object that
// defines the malloc family for the process (a statically linked or preloaded tcmalloc,
// jemalloc or mimalloc wins over glibc, as symbol interposition does), the file offsets of its
// entry points, and libc's exit() (where the report stops the process to scan its memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfprof::heap {

// What a probed function does; bpf/heap.bpf.c has the same numbers.
enum class FnKind : uint32_t {
    Malloc,         // (size)
    Calloc,         // (n, size)
    Realloc,        // (old, size)
    Reallocarray,   // (old, n, size)
    Memalign,       // (align, size): memalign, aligned_alloc
    PosixMemalign,  // (memptr, align, size)
    Valloc,         // (size): valloc, pvalloc
    Free,           // (ptr)
};

struct Probe {
    std::string function;  // raw symbol name
    FnKind kind;
    uint64_t offset;  // file offset (uprobe_path:offset)
};

struct Allocator {
    std::string name;  // "glibc", "tcmalloc", "jemalloc", "mimalloc", or the object's file name
    std::string path;  // the object holding the entry points, as the process maps it
    std::vector<Probe> probes;
    std::string exit_path;  // the object defining exit() (libc, or a static executable)
    uint64_t exit_offset = 0;
};

// The allocator of the running process `pid`, from its /proc/PID/maps. Throws Error when the
// process is gone or none of its objects defines malloc and free.
Allocator find_allocator(int pid);

// The allocator of `command` before it runs: the objects its dynamic loader would map
// (PT_INTERP --list, with this environment), or the file itself when static.
Allocator find_allocator_for_command(const std::string& command_path);

// The choice among loaded objects, in load order (executable first): exposed for tests.
Allocator choose_allocator(const std::vector<std::string>& objects);

// Why the allocator agent (a shared object interposing the malloc family, preloaded into a
// launched command or dlopen'd into a running process whose GOT slots it then patches) cannot
// profile running process `pid`, or "" when it can: a static executable (no dynamic loader),
// no dlopen in the process (glibc before 2.34 without libdl), the allocator linked into the
// executable (its calls to it are direct), an allocator called by its own prefixed names
// (je_malloc, mi_malloc, tc_malloc...), which interposing malloc does not catch, or the
// process in another mount namespace (the agent's path would not open there). Throws Error
// when the process is gone.
std::string agent_unusable(int pid);

// The same for `command_path` before it runs (launched with LD_PRELOAD): a static executable,
// the allocator in the executable, or called by prefixed names.
std::string agent_unusable(const std::string& command_path);

}  // namespace perfprof::heap
