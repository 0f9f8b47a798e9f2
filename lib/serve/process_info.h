// What serve tells about a process: its name, executable, build-id and command line (for the
// labels of its profiles, /pprof/cmdline and the index page), read from /proc.
#pragma once

#include <string>
#include <vector>

namespace perfprof::serve {

struct ProcessInfo {
    int pid = 0;
    bool alive = false;
    std::string comm;                  // /proc/PID/comm
    std::string exe;                   // /proc/PID/exe's target ("" when unreadable)
    std::string build_id;              // the executable's, lowercase hex ("" when none)
    std::vector<std::string> cmdline;  // /proc/PID/cmdline's arguments
};

// `build_id`: also read the executable's build-id (opens the ELF file).
ProcessInfo describe_process(int pid, bool build_id = true);

// Every process of the host, ascending (the index page of --all).
std::vector<int> all_processes();

// The index page: the targets, each with links to its endpoints under `prefix` + "/pid/N".
std::string index_page(const std::vector<ProcessInfo>& targets, const std::string& prefix);

// Go's /debug/pprof/ index, for one target under `base` (its path prefix).
std::string go_index_page(const ProcessInfo& target, const std::string& base);

}  // namespace perfprof::serve
