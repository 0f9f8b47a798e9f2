// libFuzzer target for what `serve` makes of a request once libmicrohttpd has parsed it (lib/http,
// the symbol protocol of lib/sym/pprof_symbols): routing by path and method under the three kinds
// of access, query arguments (%-decoding), headers, and the addresses of /pprof/symbol.
//
// Input: METHOD '\n' TARGET '\n' { HEADER-NAME ':' VALUE '\n' } '\n' BODY, TARGET split at its
// first '?' into path and query as the server does. Findings: a crash, a sanitizer report, a hang,
// an exception, or a route that breaks what route.h promises (a refusal other than 403/404/405, a
// target not served, an endpoint without a process, a secret not checked).
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "http/route.h"
#include "http/server.h"
#include "sym/kallsyms.h"
#include "sym/pprof_symbols.h"
#include "sym/symbolizer.h"
#include "sym/syms.h"

using namespace perfprof::http;

namespace {

std::string_view take_line(std::string_view& in) {
    const size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in.remove_prefix(nl == std::string_view::npos ? in.size() : nl + 1);
    return line;
}

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "http_fuzz: broken: %s\n", what);
    std::abort();
}
#define check(c) ((c) ? void() : fail(#c))

void check_route(const Request& r, const Access& a) {
    auto routed = route(r, a);
    if (const auto* no = std::get_if<Response>(&routed)) {
        check(no->status == 403 || no->status == 404 || no->status == 405);
        check(!no->body.empty() && no->body.back() == '\n');
        return;
    }
    const Route& rt = std::get<Route>(routed);
    check(rt.pid >= 0);
    if (rt.endpoint != Endpoint::Index) check(rt.pid > 0);
    if (a.all) {
        const std::string head = "/" + a.secret;
        check(r.path.compare(0, head.size(), head) == 0);
        check(r.path.size() == head.size() || r.path[head.size()] == '/');
        check(rt.prefix.compare(0, head.size(), head) == 0);
    } else if (rt.pid > 0) {
        check(std::find(a.pids.begin(), a.pids.end(), rt.pid) != a.pids.end());
    }
    check(rt.prefix.size() <= r.path.size());
    const bool get = r.method == "GET" || r.method == "HEAD";
    check(get || (r.method == "POST" && rt.endpoint == Endpoint::Symbol));
}

// Every answer line is "0xADDR<TAB>NAME" with a name of one line.
void check_symbols(std::string_view body) {
    // One symbolizer for every input: kallsyms and this process's maps are read once.
    static perfprof::sym::Symbolizer symbols;
    static const int self = ::getpid();
    const std::string page = perfprof::sym::symbol_page(symbols, self, body);
    check(page.empty() || page.back() == '\n');
    size_t pos = 0;
    while (pos < page.size()) {
        const size_t nl = page.find('\n', pos);
        const std::string_view line(page.data() + pos, nl - pos);
        pos = nl + 1;
        check(line.size() > 3 && line.substr(0, 2) == "0x" && line.find('\t') != std::string_view::npos);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    Request r;
    r.method = take_line(in);
    const std::string_view target = take_line(in);
    const size_t q = target.find('?');
    r.path = target.substr(0, q);
    if (q != std::string_view::npos) r.query = target.substr(q + 1);
    while (!in.empty()) {
        const std::string_view h = take_line(in);
        if (h.empty()) break;
        const size_t colon = h.find(':');
        r.headers.emplace_back(h.substr(0, colon), colon == std::string_view::npos ? "" : h.substr(colon + 1));
    }
    r.body = in;
    r.peer = "127.0.0.1:1";

    check_route(r, Access{false, "", {12}});
    check_route(r, Access{false, "", {12, 34, 2147483647}});
    check_route(r, Access{true, "s3cret", {}});
    check_route(r, Access{true, "s3cret", {12}});

    for (std::string_view name : {"seconds", "debug", "", "a b", "%"}) {
        if (auto v = r.arg(name)) check(v->size() <= r.query.size());
    }
    if (!r.headers.empty()) check(r.header(r.headers.front().first).has_value());
    (void)r.header("content-length");
    check(same_secret(r.body, r.body));
    if (r.body != r.path) check(!same_secret(r.body, r.path));

    check_symbols(r.body);
    check_symbols(r.query);
    return 0;
}
