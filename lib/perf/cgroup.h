// --cgroups: perf_event cgroups by name or by regular expression (SPEC §1.6).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/fd.h"

namespace perfprof::perf {

struct Cgroup {
    std::string path;  // relative to the mount point, "" = root
    core::Fd fd;       // the directory, for perf_event_open with PERF_FLAG_PID_CGROUP
};

// Every directory below `mount`, relative to it ("" = `mount` itself), parents first;
// symbolic links are not followed; none when `mount` is no directory. The names a --cgroups regular
// expression is matched on.
std::vector<std::string> cgroup_dirs(const std::string& mount);

// Opens every cgroup the list names. Throws Error for no mount, no match, no access.
std::vector<Cgroup> open_cgroups(std::string_view list);

}  // namespace perfprof::perf
