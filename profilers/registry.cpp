// The explicit profiler registry, built from profilers.def (no static self-registration,
// which silently drops objects linked from archives).
#include <algorithm>

#include "perf-prof/profiler.h"

namespace perfprof {

#define PROFILER(name, info) extern const ProfilerInfo info;
#include "profilers/profilers.def"
#undef PROFILER

const std::vector<const ProfilerInfo*>& all_profilers() {
    static const std::vector<const ProfilerInfo*> list = {
#define PROFILER(name, info) &info,
#include "profilers/profilers.def"
#undef PROFILER
    };
    return list;
}

const ProfilerInfo* find_profiler(std::string_view name) {
    for (const ProfilerInfo* p : all_profilers())
        if (name == p->name) return p;
    return nullptr;
}

}  // namespace perfprof
