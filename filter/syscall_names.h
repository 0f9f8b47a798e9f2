// Syscall numbers to names for the expression built-in syscall_name(id) (SPEC §2.7.6).
#pragma once

#include <cstdint>

namespace perfprof::filter {

// The x86_64 name of syscall `id` ("read" for 0), or nullptr when the number is unknown.
// The table is generated at build time from the system's asm/unistd_64.h.
const char* syscall_name(int64_t id);

}  // namespace perfprof::filter
