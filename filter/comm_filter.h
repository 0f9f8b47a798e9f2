// Task-name pattern lists (--filter of signal and task-state) as ftrace filter strings.
#pragma once

#include <string>
#include <string_view>

namespace perfprof::filter {

// "bash,ssh*" → `comm=="bash"||comm~"ssh*"`: plain names compare with ==, names holding a
// glob character (* ? [) match with ~. Throws Error::usage for an empty item, an item longer
// than 15 characters, or one containing '"' or '\'.
std::string comm_filter(std::string_view patterns, std::string_view field = "comm");

}  // namespace perfprof::filter
