// The plan of an injection (heap/injector.h's call_in_process), made before any thread of the
// target is stopped: where the target maps libc's dlopen and dlerror, the shared object to load
// (its identity as the target sees it: a mount namespace may hide our path) and its function,
// and the code a thread must not be stopped in (libc's and the loader's). Plus the /proc
// readings the injector process needs again while it works.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sym/syms.h"

namespace perfprof::heap::inject {

constexpr int kDefaultTimeoutMs = 10000;

// The lines of /proc/PID/maps (none when the process is gone).
std::vector<sym::MapsLine> read_maps(int pid);

// A file as the target sees it: its path there and its identity.
struct FileId {
    std::string path;
    uint32_t major = 0, minor = 0;
    uint64_t inode = 0;
    bool is(const sym::MapsLine& m) const {
        return m.path == path || (inode && m.inode == inode && m.dev_major == major && m.dev_minor == minor);
    }
};

// Where file offset `off` of `f` is mapped in the process; 0 when nowhere.
uint64_t address_of(const std::vector<sym::MapsLine>& maps, const FileId& f, uint64_t off);

// Whether signal `sig` is in a hexadecimal mask of /proc/PID/status ("SigBlk:").
bool sigmask_has(const std::string& hex, int sig);

// What the injector process needs, found before any thread is stopped.
struct Plan {
    int pid = 0;
    std::string who;  // "process PID"
    uint64_t dlopen = 0, dlerror = 0;
    FileId so;
    uint64_t fn_offset = 0;
    uint64_t fn_addr = 0;  // when the process maps the file already
    std::string fn;
    std::vector<std::pair<uint64_t, uint64_t>> unsafe_text;  // libc's and the loader's code
    int timeout_ms = kDefaultTimeoutMs;
};

// Throws Error with a one-line reason when the process cannot be injected.
Plan make_plan(int pid, const std::string& so_path, const char* fn, int timeout_ms);

}  // namespace perfprof::heap::inject
