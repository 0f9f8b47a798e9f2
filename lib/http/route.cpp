#include "http/route.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace perfprof::http {

namespace {

Response forbidden() {
    return Response::text(403, "403 forbidden");
}

Response not_found(std::string why) {
    return Response::text(404, "404 not found: " + std::move(why));
}

struct Suffix {
    std::string_view path;
    Endpoint endpoint;
    bool post;  // takes POST as well as GET and HEAD
};

constexpr Suffix kSuffixes[] = {
    {"/pprof/profile", Endpoint::Profile, false},
    {"/pprof/heap", Endpoint::Heap, false},
    {"/pprof/growth", Endpoint::Growth, false},
    {"/pprof/symbol", Endpoint::Symbol, true},
    {"/pprof/cmdline", Endpoint::Cmdline, false},
    {"/debug/pprof/profile", Endpoint::GoProfile, false},
    {"/debug/pprof/heap", Endpoint::GoHeap, false},
    {"/debug/pprof/allocs", Endpoint::GoAllocs, false},
    {"/debug/pprof/block", Endpoint::GoBlock, false},
    {"/debug/pprof/mutex", Endpoint::GoMutex, false},
    {"/debug/pprof/symbol", Endpoint::Symbol, true},
    {"/debug/pprof/cmdline", Endpoint::GoCmdline, false},
    {"/debug/pprof/", Endpoint::GoIndex, false},
    {"/debug/pprof", Endpoint::GoIndex, false},
    {"/", Endpoint::Index, false},
    {"", Endpoint::Index, false},
};

// "/pid/N" at the start of `rest`: N (1..2^31-1, digits only) and `rest` after it; 0 when
// absent, -1 when malformed.
int take_pid(std::string_view& rest) {
    constexpr std::string_view kPid = "/pid/";
    if (rest.substr(0, kPid.size()) != kPid) return 0;
    std::string_view digits = rest.substr(kPid.size());
    digits = digits.substr(0, digits.find('/'));
    int pid = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || pid <= 0 ||
        digits[0] == '0')
        return -1;
    rest.remove_prefix(kPid.size() + digits.size());
    return pid;
}

}  // namespace

bool same_secret(std::string_view a, std::string_view b) {
    unsigned diff = a.size() != b.size();
    for (size_t i = 0; i < a.size(); ++i) diff |= unsigned(uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0));
    return diff == 0;
}

std::variant<Route, Response> route(const Request& r, const Access& a) {
    std::string_view rest = r.path;
    Route out;
    if (a.all) {
        // "/SECRET" then "/..." or the end: anything else is refused alike.
        std::string_view first = rest.substr(0, rest.find('/', 1));
        if (first.size() < 2 || first[0] != '/' || !same_secret(first.substr(1), a.secret))
            return forbidden();
        rest.remove_prefix(first.size());
        out.prefix = first;
    }
    const size_t before_pid = rest.size();
    out.pid = take_pid(rest);
    if (out.pid < 0) return a.all ? not_found("a process is named /pid/N") : forbidden();
    if (out.pid > 0) {
        out.prefix += r.path.substr(r.path.size() - before_pid, before_pid - rest.size());
        if (!a.all && std::find(a.pids.begin(), a.pids.end(), out.pid) == a.pids.end()) return forbidden();
    }
    const Suffix* s = std::find_if(std::begin(kSuffixes), std::end(kSuffixes),
                                   [&](const Suffix& x) { return x.path == rest; });
    if (s == std::end(kSuffixes)) return not_found(std::string(r.path));
    out.endpoint = s->endpoint;
    const bool get = r.method == "GET" || r.method == "HEAD";
    if (!get && !(s->post && r.method == "POST")) {
        Response no = Response::text(405, "405 method not allowed: " + r.method);
        no.headers.emplace_back("Allow", s->post ? "GET, HEAD, POST" : "GET, HEAD");
        return no;
    }
    if (out.pid == 0 && out.endpoint != Endpoint::Index) {
        if (a.all) return not_found("name the process: " + out.prefix + "/pid/N" + std::string(rest));
        if (a.pids.size() != 1) return not_found("several processes are served: /pid/N" + std::string(rest));
        out.pid = a.pids.front();
    }
    return out;
}

}  // namespace perfprof::http
