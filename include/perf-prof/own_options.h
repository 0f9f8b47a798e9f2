// The options only one profiler takes (ProfilerInfo::own_options), typed: a profiler declares
// its struct T (derived from ProfilerOptions) and writes its rows with setters that take T&.
//
//   struct TraceOptions final : ProfilerOptions { bool overwrite = false; };
//   using Own = OwnOptions<TraceOptions>;
//   const OptionRow kOwnOptions[] = {
//       Own::row(0, "overwrite", "", ArgKind::Flag, false, Group::Profiler, "help text",
//                [](TraceOptions& o, OptionValue v) { o.overwrite = flag_value(v); }),
//   };
//   ... .own_options = kOwnOptions, .make_options = Own::make,
//
// The profiler reads them back with Options::own_as<T>().
#pragma once

#include <memory>
#include <type_traits>

#include "perf-prof/options.h"

namespace perfprof {

// A flag's value as the parser stores it: "1" given, "0" for --no-NAME.
inline bool flag_value(OptionValue v) {
    return v && *v == "1";
}

template <class T>
struct OwnOptions {
    static_assert(std::is_base_of_v<ProfilerOptions, T>, "own options derive from ProfilerOptions");

    // ProfilerInfo::make_options: T with its defaults, for the parser to fill.
    static std::shared_ptr<ProfilerOptions> make() { return std::make_shared<T>(); }

    // One row of T's options (id Opt::Own). `set` is a lambda without captures taking
    // (T&, OptionValue): it validates the value (Error::usage on a bad one) and stores it.
    template <class Set>
    static constexpr OptionRow row(char short_name, const char* long_name, const char* hint, ArgKind kind,
                                   bool negatable, Group group, const char* help, Set set) {
        static_assert(std::is_empty_v<Set> && std::is_default_constructible_v<Set>,
                      "a row's setter captures nothing");
        (void)set;
        return {Opt::Own,
                short_name,
                long_name,
                hint,
                kind,
                negatable,
                group,
                help,
                [](ProfilerOptions& own, OptionValue v) { Set{}(static_cast<T&>(own), v); }};
    }
};

}  // namespace perfprof
