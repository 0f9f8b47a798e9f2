// The LAT column of event lines (SPEC §3.8).
#pragma once

#include <string>

namespace perfprof::tep {

// `flags` is common_flags, `preempt_count` common_preempt_count (only its low 8 bits exist).
// Four characters, five when the preempt count is above 15.
std::string lat_flags(unsigned flags, unsigned preempt_count);

}  // namespace perfprof::tep
