// Finding tracefs, and mounting it at /sys/kernel/tracing when we are root and it is not.
#pragma once

#include <string>
#include <vector>

namespace perfprof::tep {

// The tracefs directory (e.g. "/sys/kernel/tracing"). Mounts it when needed and possible;
// throws Error with a hint otherwise. The result is cached.
const std::string& tracefs_dir();

// Every tracepoint of the running kernel as "sys:name", sorted byte-wise (SPEC §1.12): an
// entry of events/SYS/ counts when it is a directory with an `id` file.
std::vector<std::string> tracepoint_list();
// The same list for an events directory laid out as tracefs's (Tep's, maybe recorded).
std::vector<std::string> tracepoints_in(const std::string& events_dir);

// Reads a whole (small) file; throws Error naming the path on failure.
std::string read_file(const std::string& path);

}  // namespace perfprof::tep
