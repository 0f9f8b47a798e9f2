// The explicit profiler registry, built from profilers.def (no static self-registration,
// which silently drops objects linked from archives).
#include <algorithm>

#include "perf-prof/profiler.h"

namespace perfprof {

#define PROFILER(name, info) extern const ProfilerInfo info;
#define COMMAND(name, info) extern const ProfilerInfo info;
#include "profilers/profilers.def"
#undef COMMAND
#undef PROFILER

const std::vector<const ProfilerInfo*>& all_profilers() {
    static const std::vector<const ProfilerInfo*> list = {
#define PROFILER(name, info) &info,
#define COMMAND(name, info) &info,
#include "profilers/profilers.def"
#undef COMMAND
#undef PROFILER
    };
    return list;
}

const ProfilerInfo* find_profiler(std::string_view name) {
    for (const ProfilerInfo* p : all_profilers())
        if (name == p->name) return p;
    return nullptr;
}

const std::vector<std::string>& profiler_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const ProfilerInfo* p : all_profilers()) v.emplace_back(p->name);
        return v;
    }();
    return names;
}

}  // namespace perfprof
