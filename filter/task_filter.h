// ftrace filter strings that select tasks: by name patterns (--filter of signal and
// task-state) or by thread ids (task-state attached to tasks, SPEC §4.4.2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace perfprof::filter {

// "bash,ssh*" → `comm=="bash"||comm~"ssh*"`: plain names compare with ==, names holding a
// glob character (* ? [) match with ~. Throws Error::usage for an empty item, an item longer
// than 15 characters, or one containing '"' or '\'.
std::string comm_filter(std::string_view patterns, std::string_view field = "comm");

// Ascending thread ids {3,4,5,9} → `(pid>=3&&pid<=5)||pid==9`: runs of consecutive ids as
// ranges, so a process's threads (mostly consecutive) keep the filter short.
std::string pid_filter(const std::vector<int>& tids, std::string_view field = "pid");

}  // namespace perfprof::filter
