// serve's routing and access rules (http/route): which endpoint a path names, and what is
// refused, and how.
#include "http/route.h"

#include <gtest/gtest.h>

namespace perfprof::http {
namespace {

Request get(std::string path, std::string method = "GET") {
    Request r;
    r.method = std::move(method);
    r.path = std::move(path);
    return r;
}

int status(const std::variant<Route, Response>& v) {
    if (auto* r = std::get_if<Response>(&v)) return r->status;
    return 0;
}

Route ok(const std::variant<Route, Response>& v) {
    EXPECT_TRUE(std::holds_alternative<Route>(v)) << std::get<Response>(v).body;
    return std::holds_alternative<Route>(v) ? std::get<Route>(v) : Route{};
}

TEST(Route, NamedTargetsEndpoints) {
    Access one{false, "", {42}};
    EXPECT_EQ(ok(route(get("/pprof/profile"), one)).endpoint, Endpoint::Profile);
    EXPECT_EQ(ok(route(get("/pprof/profile"), one)).pid, 42);
    EXPECT_EQ(ok(route(get("/pprof/heap"), one)).endpoint, Endpoint::Heap);
    EXPECT_EQ(ok(route(get("/pprof/growth"), one)).endpoint, Endpoint::Growth);
    EXPECT_EQ(ok(route(get("/pprof/cmdline"), one)).endpoint, Endpoint::Cmdline);
    EXPECT_EQ(ok(route(get("/pprof/symbol", "POST"), one)).endpoint, Endpoint::Symbol);
    EXPECT_EQ(ok(route(get("/debug/pprof/profile"), one)).endpoint, Endpoint::GoProfile);
    EXPECT_EQ(ok(route(get("/debug/pprof/heap"), one)).endpoint, Endpoint::GoHeap);
    EXPECT_EQ(ok(route(get("/debug/pprof/allocs"), one)).endpoint, Endpoint::GoAllocs);
    EXPECT_EQ(ok(route(get("/debug/pprof/block"), one)).endpoint, Endpoint::GoBlock);
    EXPECT_EQ(ok(route(get("/debug/pprof/mutex"), one)).endpoint, Endpoint::GoMutex);
    EXPECT_EQ(ok(route(get("/debug/pprof/symbol"), one)).endpoint, Endpoint::Symbol);
    EXPECT_EQ(ok(route(get("/debug/pprof/cmdline"), one)).endpoint, Endpoint::GoCmdline);
    EXPECT_EQ(ok(route(get("/debug/pprof/"), one)).endpoint, Endpoint::GoIndex);
    EXPECT_EQ(ok(route(get("/"), one)).endpoint, Endpoint::Index);
    const Route r = ok(route(get("/pid/42/pprof/heap", "HEAD"), one));
    EXPECT_EQ(r.pid, 42);
    EXPECT_EQ(r.prefix, "/pid/42");
    EXPECT_EQ(ok(route(get("/pid/42/"), one)).endpoint, Endpoint::Index);
}

TEST(Route, RefusalsSayNothingOfThePid) {
    Access two{false, "", {42, 43}};
    EXPECT_EQ(ok(route(get("/pid/43/pprof/heap"), two)).pid, 43);
    const auto a = route(get("/pid/44/pprof/heap"), two);  // alive or not: the same answer
    const auto b = route(get("/pid/999999/pprof/heap"), two);
    ASSERT_EQ(status(a), 403);
    ASSERT_EQ(status(b), 403);
    EXPECT_EQ(std::get<Response>(a).body, std::get<Response>(b).body);
    EXPECT_EQ(status(route(get("/pid/0/pprof/heap"), two)), 403);
    EXPECT_EQ(status(route(get("/pid/042/pprof/heap"), two)), 403);
    EXPECT_EQ(status(route(get("/pid/-1/pprof/heap"), two)), 403);
    EXPECT_EQ(status(route(get("/pid/99999999999999999999/pprof/heap"), two)), 403);
    // Several targets: the plain paths name none of them.
    EXPECT_EQ(status(route(get("/pprof/heap"), two)), 404);
    EXPECT_EQ(ok(route(get("/"), two)).pid, 0);
}

TEST(Route, UnknownPathsAndMethods) {
    Access one{false, "", {42}};
    EXPECT_EQ(status(route(get("/pprof/nothing"), one)), 404);
    EXPECT_EQ(status(route(get("/pprof/heap/"), one)), 404);
    EXPECT_EQ(status(route(get("/../../etc/passwd"), one)), 404);
    EXPECT_EQ(status(route(get(std::string(5000, 'a')), one)), 404);
    const auto del = route(get("/pprof/heap", "DELETE"), one);
    ASSERT_EQ(status(del), 405);
    EXPECT_EQ(std::get<Response>(del).headers.at(0).second, "GET, HEAD");
    EXPECT_EQ(status(route(get("/pprof/heap", "POST"), one)), 405);
    const auto put = route(get("/pprof/symbol", "PUT"), one);
    ASSERT_EQ(status(put), 405);
    EXPECT_EQ(std::get<Response>(put).headers.at(0).second, "GET, HEAD, POST");
}

TEST(Route, AllProcessesBehindTheSecret) {
    Access all{true, "0123456789abcdef0123456789abcdef", {}};
    const Route r = ok(route(get("/0123456789abcdef0123456789abcdef/pid/7/pprof/heap"), all));
    EXPECT_EQ(r.pid, 7);
    EXPECT_EQ(r.endpoint, Endpoint::Heap);
    EXPECT_EQ(r.prefix, "/0123456789abcdef0123456789abcdef/pid/7");
    EXPECT_EQ(ok(route(get("/0123456789abcdef0123456789abcdef/"), all)).endpoint, Endpoint::Index);
    EXPECT_EQ(ok(route(get("/0123456789abcdef0123456789abcdef"), all)).endpoint, Endpoint::Index);
    // Without it, or with a wrong one, everything is the same 403: paths, pids, methods.
    const std::string body = std::get<Response>(route(get("/"), all)).body;
    for (const char* p :
         {"/", "/pid/1/pprof/heap", "/pid/999999/pprof/heap", "/pprof/symbol", "/x",
          "/0123456789abcdef0123456789abcde/pid/1/pprof/heap",
          "/0123456789abcdef0123456789abcdef0/pid/1/pprof/heap", "//pid/1/pprof/heap", "",
          // Not after a '/' (http_fuzz): the secret's first character is no wildcard.
          "x0123456789abcdef0123456789abcdef/pid/1/pprof/heap", ".0123456789abcdef0123456789abcdef"}) {
        const auto v = route(get(p), all);
        ASSERT_EQ(status(v), 403) << p;
        EXPECT_EQ(std::get<Response>(v).body, body) << p;
    }
    EXPECT_EQ(status(route(get("/pid/1/pprof/heap", "DELETE"), all)), 403);
    // Behind the secret a process must be named.
    EXPECT_EQ(status(route(get("/0123456789abcdef0123456789abcdef/pprof/heap"), all)), 404);
}

TEST(Route, SameSecret) {
    EXPECT_TRUE(same_secret("abc", "abc"));
    EXPECT_FALSE(same_secret("abc", "abd"));
    EXPECT_FALSE(same_secret("abc", "ab"));
    EXPECT_FALSE(same_secret("ab", "abc"));
    EXPECT_FALSE(same_secret("", "a"));
}

}  // namespace
}  // namespace perfprof::http
