// What a request to `serve` asks for and whether it may: the pprof endpoints of gperftools
// (/pprof/...) and of Go's net/http/pprof (/debug/pprof/...), optionally after /pid/N to pick
// a target, all after /SECRET when every process of the host is served. Pure: no /proc.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "http/server.h"

namespace perfprof::http {

enum class Endpoint {
    Index,      // "/", "/pid/N/": the targets, as a short HTML page
    GoIndex,    // "/debug/pprof/": Go's index of profiles
    Profile,    // /pprof/profile?seconds=N: gperftools' binary CPU profile and the maps
    GoProfile,  // /debug/pprof/profile?seconds=N: gzip profile.proto
    Heap,       // /pprof/heap: heap_v2 text
    GoHeap,     // /debug/pprof/heap: profile.proto (debug=1: the text)
    GoAllocs,   // /debug/pprof/allocs: the heap profile, alloc_space first
    GoBlock,    // /debug/pprof/block?seconds=N: waits off the CPU by stack (profile.proto)
    GoMutex,    // /debug/pprof/mutex?seconds=N: contended futex waits by releasing stack
    Growth,     // /pprof/growth: growthz text
    Symbol,     // /pprof/symbol, /debug/pprof/symbol: GET num_symbols, POST addresses
    Cmdline,    // /pprof/cmdline: one argument per line
    GoCmdline,  // /debug/pprof/cmdline: NUL-separated, as Go's
};

// Who may see what (issue: by default only the named targets; every process behind a secret).
struct Access {
    bool all = false;       // every process of the host, behind `secret`
    std::string secret;     // the path's first segment when `all`
    std::vector<int> pids;  // the targets otherwise
};

struct Route {
    Endpoint endpoint = Endpoint::Index;
    int pid = 0;         // the target: /pid/N, else the only one (0: none named, an index)
    std::string prefix;  // the path before the endpoint: "/SECRET/pid/N" (links on pages)
};

// The route of `r`, or the response that refuses it: 403 (the same for a missing or wrong
// secret and for a pid not served, so that nothing is learnt), 404 (unknown path, or no
// target named where several are served), 405 (a method the endpoint does not take).
std::variant<Route, Response> route(const Request& r, const Access& a);

// Constant-time comparison: the secret leaks nothing through the time a refusal takes.
bool same_secret(std::string_view a, std::string_view b);

}  // namespace perfprof::http
