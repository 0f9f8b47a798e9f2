#include "http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/fd.h"
#include "perf-prof/error.h"

using perfprof::Error;
using perfprof::core::Fd;
using perfprof::http::Request;
using perfprof::http::Response;
using perfprof::http::Server;
using namespace std::chrono_literals;

namespace {

// The caller's event loop in small: epoll on server.fd(), bounded by the server's timeout.
// Clients run on other threads (blocking sockets) while the test thread turns this loop, so
// every server callback runs on the test thread as it will in `serve`.
class Loop {
public:
    explicit Loop(Server& s) : s_(s), ep_(epoll_create1(EPOLL_CLOEXEC)) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        epoll_ctl(ep_.get(), EPOLL_CTL_ADD, s_.fd(), &ev);
    }
    void once(int max_ms = 10) {
        int t = s_.timeout_ms();
        if (t < 0 || t > max_ms) t = max_ms;
        epoll_event ev;
        epoll_wait(ep_.get(), &ev, 1, t);
        s_.run();
    }
    // Whether server.fd() is readable now: what wakes a loop that waits without a timeout.
    bool ready() {
        epoll_event ev;
        return epoll_wait(ep_.get(), &ev, 1, 0) == 1;
    }
    // Turns the loop as `serve` will, sleeping as long as the server says, until pred() holds
    // (a server callback sets it); false after `limit`: the server failed to wake the loop.
    template <class P>
    bool strictly_until(P pred, std::chrono::milliseconds limit) {
        auto end = std::chrono::steady_clock::now() + limit;
        while (!pred()) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left <= 0ms) return false;
            int t = s_.timeout_ms();
            if (t < 0 || t > left.count()) t = int(left.count());
            epoll_event ev;
            epoll_wait(ep_.get(), &ev, 1, t);
            s_.run();
        }
        return true;
    }
    // Turns the loop until pred() holds; false after `limit`.
    template <class P>
    bool until(P pred, std::chrono::milliseconds limit = 5000ms) {
        auto end = std::chrono::steady_clock::now() + limit;
        while (!pred()) {
            if (std::chrono::steady_clock::now() > end) return false;
            once();
        }
        return true;
    }
    // f() on a client thread, the loop turning meanwhile; f's result.
    template <class F>
    auto client(F f) {
        auto fut = std::async(std::launch::async, std::move(f));
        until([&] { return fut.wait_for(0ms) == std::future_status::ready; }, 20000ms);
        return fut.get();
    }

private:
    Server& s_;
    Fd ep_;
};

struct Reply {
    int status = 0;  // 0: the connection closed (or timed out) before a status line
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
};

class Conn {
public:
    explicit Conn(uint16_t port, bool v6 = false)
        : fd_(socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        timeval tv{5, 0};  // a broken server fails the test instead of hanging it
        setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (v6) {
            sockaddr_in6 a{};
            a.sin6_family = AF_INET6;
            a.sin6_port = htons(port);
            a.sin6_addr = in6addr_loopback;
            connected_ = connect(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        } else {
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(port);
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            connected_ = connect(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        }
    }
    bool connected() const { return connected_; }
    // Errors are ignored: a server that hung up on a bad request is what some tests expect.
    void send(std::string_view s) {
        while (!s.empty()) {
            ssize_t n = ::send(fd_.get(), s.data(), s.size(), MSG_NOSIGNAL);
            if (n <= 0) return;
            s.remove_prefix(size_t(n));
        }
    }
    void shutdown_write() { ::shutdown(fd_.get(), SHUT_WR); }
    void close() { fd_.reset(); }
    // True when the server closed the connection (EOF or reset) with nothing more to read.
    bool closed_by_server() {
        char c;
        ssize_t n = recv(fd_.get(), &c, 1, 0);
        return n == 0 || (n < 0 && errno == ECONNRESET);
    }
    // One response; `head`: a response to HEAD, without a body whatever its Content-Length.
    Reply read(bool head = false) {
        Reply r;
        size_t end;
        while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
            if (!fill()) return r;
        std::string head_text = buf_.substr(0, end);
        buf_.erase(0, end + 4);
        if (head_text.compare(0, 9, "HTTP/1.1 ") != 0 && head_text.compare(0, 9, "HTTP/1.0 ") != 0) return r;
        r.status = std::atoi(head_text.c_str() + 9);
        size_t pos = head_text.find("\r\n");
        while (pos != std::string::npos) {
            size_t next = head_text.find("\r\n", pos + 2);
            std::string line = head_text.substr(pos + 2, next == std::string::npos ? next : next - pos - 2);
            size_t colon = line.find(':');
            std::string name = line.substr(0, colon);
            for (char& ch : name) ch = char(std::tolower(ch));
            size_t v = line.find_first_not_of(' ', colon + 1);
            r.headers[name] = v == std::string::npos ? "" : line.substr(v);
            pos = next;
        }
        size_t len =
            head ? 0 : std::stoul(r.headers.count("content-length") ? r.headers["content-length"] : "0");
        while (buf_.size() < len)
            if (!fill()) break;
        r.body = buf_.substr(0, len);
        buf_.erase(0, len);
        return r;
    }

private:
    bool fill() {
        char tmp[65536];
        ssize_t n = recv(fd_.get(), tmp, sizeof tmp, 0);
        if (n <= 0) return false;
        buf_.append(tmp, size_t(n));
        return true;
    }
    Fd fd_;
    bool connected_ = false;
    std::string buf_;
};

// One request as raw bytes on a fresh connection, and its response.
Reply ask(uint16_t port, const std::string& raw, bool v6 = false) {
    Conn c(port, v6);
    c.send(raw);
    return c.read();
}
Reply get(uint16_t port, const std::string& target) {
    return ask(port, "GET " + target + " HTTP/1.1\r\nHost: test\r\n\r\n");
}

Server::Limits small_limits() {
    Server::Limits l;
    l.max_body = 1 << 20;
    l.head_memory = 16 << 10;
    l.idle_timeout_s = 5;
    return l;
}

// A server answering every request with "METHOD PATH" after remembering the request.
struct Echo {
    std::vector<Request> seen;
    Server server;
    explicit Echo(Server::Limits l = small_limits())
        : server(
              "127.0.0.1:0", l,
              [this](Server::RequestId, const Request& r) {
                  seen.push_back(r);
                  return Response::text(200, r.method + " " + r.path);
              },
              [](Server::RequestId) {}) {}
};

}  // namespace

TEST(HttpServer, GetWithQueryArgsDecoded) {
    Echo e;
    Loop loop(e.server);
    ASSERT_NE(e.server.port(), 0);
    EXPECT_EQ(e.server.timeout_ms(), -1);  // nothing to time out
    EXPECT_FALSE(loop.ready());
    Reply r = loop.client([&] {
        return ask(e.server.port(),
                   "GET /pid/12/pprof/heap?seconds=5&name=a%20b+c&flag&pct=100%25&bad=%zz&empty= HTTP/1.1\r\n"
                   "Host: test\r\nX-Custom: Foo Bar\r\n\r\n");
    });
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "GET /pid/12/pprof/heap\n");
    EXPECT_EQ(r.headers["content-type"], "text/plain; charset=utf-8");
    EXPECT_EQ(r.headers["x-content-type-options"], "nosniff");
    ASSERT_EQ(e.seen.size(), 1u);
    const Request& q = e.seen[0];
    EXPECT_EQ(q.method, "GET");
    EXPECT_EQ(q.path, "/pid/12/pprof/heap");
    EXPECT_EQ(q.query, "seconds=5&name=a%20b+c&flag&pct=100%25&bad=%zz&empty=");
    EXPECT_EQ(q.arg("seconds"), "5");
    EXPECT_EQ(q.arg("name"), "a b c");
    EXPECT_EQ(q.arg("flag"), "");
    EXPECT_EQ(q.arg("pct"), "100%");
    EXPECT_EQ(q.arg("bad"), "%zz");
    EXPECT_EQ(q.arg("empty"), "");
    EXPECT_EQ(q.arg("missing"), std::nullopt);
    EXPECT_EQ(q.header("x-custom"), "Foo Bar");
    EXPECT_EQ(q.header("HOST"), "test");
    EXPECT_EQ(q.header("X-Missing"), std::nullopt);
    EXPECT_EQ(q.peer.rfind("127.0.0.1:", 0), 0u) << q.peer;
    EXPECT_EQ(q.body, "");
}

TEST(HttpServer, PathStaysAsSentAndTextEndsInNewline) {
    Echo e;
    Loop loop(e.server);
    Reply r = loop.client([&] { return get(e.server.port(), "/a%2Fb/c"); });
    EXPECT_EQ(r.status, 200);
    ASSERT_EQ(e.seen.size(), 1u);
    EXPECT_EQ(e.seen[0].path, "/a%2Fb/c");
    EXPECT_EQ(e.seen[0].query, "");
    EXPECT_EQ(Response::text(404, "no").body, "no\n");
    EXPECT_EQ(Response::text(404, "no\n").body, "no\n");
    EXPECT_EQ(Response::text(404, "no").status, 404);
}

TEST(HttpServer, PostBodyDeliveredWhole) {
    Echo e;
    Loop loop(e.server);
    std::string body;
    for (size_t i = 0; body.size() < 100 * 1024; ++i) body += std::to_string(i) + (i % 7 ? "," : "\n");
    auto post = std::async(std::launch::async, [&] {
        return ask(
            e.server.port(),
            "POST /symbol HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Content-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
    });
    // Read in many pieces (the head memory is 16 KiB): every one without a wait the server did
    // not ask for, up to the client's close after the answer.
    EXPECT_TRUE(
        loop.strictly_until([&] { return e.seen.size() == 1 && e.server.connections() == 0; }, 3000ms));
    Reply r = post.get();
    EXPECT_EQ(r.status, 200);
    ASSERT_EQ(e.seen.size(), 1u);
    EXPECT_EQ(e.seen[0].method, "POST");
    EXPECT_EQ(e.seen[0].body, body);

    // The same without a length, in chunks.
    r = loop.client([&] {
        return ask(e.server.port(),
                   "POST /symbol HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    });
    EXPECT_EQ(r.status, 200);
    ASSERT_EQ(e.seen.size(), 2u);
    EXPECT_EQ(e.seen[1].body, "hello world");
}

TEST(HttpServer, KeepAliveServesTwoRequestsOnOneConnection) {
    Echo e;
    Loop loop(e.server);
    auto [a, b, open] = loop.client([&] {
        Conn c(e.server.port());
        c.send("GET /one HTTP/1.1\r\nHost: test\r\n\r\n");
        Reply a = c.read();
        c.send("HEAD /two HTTP/1.1\r\nHost: test\r\n\r\n");
        Reply b = c.read(true);
        // Still open: a third request is answered on it too.
        c.send("GET /three HTTP/1.1\r\nHost: test\r\n\r\n");
        Reply t = c.read();
        return std::tuple(a, b, t.status == 200);
    });
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, "GET /one\n");
    EXPECT_EQ(b.status, 200);
    EXPECT_EQ(b.body, "");
    EXPECT_EQ(b.headers["content-length"], "10");  // "HEAD /two\n", not sent
    EXPECT_TRUE(open);
    ASSERT_EQ(e.seen.size(), 3u);
    EXPECT_EQ(e.seen[0].peer, e.seen[2].peer);  // one connection
}

TEST(HttpServer, DeferredReplyAfterOtherRequestsWereServed) {
    std::vector<Server::RequestId> deferred;
    std::vector<Server::RequestId> aborted;
    bool after = false;
    Server s(
        "127.0.0.1:0", small_limits(),
        [&](Server::RequestId id, const Request& r) -> std::optional<Response> {
            if (r.path == "/slow") {
                deferred.push_back(id);
                return std::nullopt;
            }
            after = r.path == "/after";
            return Response::text(200, "fast");
        },
        [&](Server::RequestId id) { aborted.push_back(id); });
    Loop loop(s);
    auto slow = std::async(std::launch::async, [&] {
        Conn c(s.port());
        c.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n");
        Reply r = c.read();
        // The connection goes on after a deferred answer.
        c.send("GET /after HTTP/1.1\r\nHost: test\r\n\r\n");
        return std::pair(r, c.read());
    });
    ASSERT_TRUE(loop.until([&] { return s.waiting() == 1; }));
    for (int i = 0; i < 3; ++i) {
        Reply f = loop.client([&] { return get(s.port(), "/fast"); });
        EXPECT_EQ(f.status, 200);
        EXPECT_EQ(f.body, "fast\n");
    }
    EXPECT_EQ(s.waiting(), 1u);
    ASSERT_EQ(deferred.size(), 1u);
    Response late = Response::text(202, "late");
    late.content_type = "application/octet-stream";
    late.headers.emplace_back("X-Extra", "1");
    s.reply(deferred[0], late);
    EXPECT_EQ(s.waiting(), 0u);
    // The resume wakes the loop: the answer goes out and the client's next request comes in
    // without a timeout to end a wait.
    EXPECT_TRUE(loop.ready());
    EXPECT_TRUE(loop.strictly_until([&] { return after; }, 2000ms));
    s.reply(deferred[0], Response::text(500, "twice"));  // answered: ignored
    ASSERT_TRUE(loop.until([&] { return slow.wait_for(0ms) == std::future_status::ready; }));
    auto [r, next] = slow.get();
    EXPECT_EQ(r.status, 202);
    EXPECT_EQ(r.body, "late\n");
    EXPECT_EQ(r.headers["content-type"], "application/octet-stream");
    EXPECT_EQ(r.headers["x-extra"], "1");
    EXPECT_EQ(r.headers["x-content-type-options"], "nosniff");
    EXPECT_EQ(next.status, 200);
    EXPECT_TRUE(aborted.empty());
}

TEST(HttpServer, ClientGoneWhileDeferredAbortsOnce) {
    std::vector<Server::RequestId> deferred;
    std::vector<Server::RequestId> aborted;
    Server* self = nullptr;
    Server s(
        "127.0.0.1:0", small_limits(),
        [&](Server::RequestId id, const Request&) -> std::optional<Response> {
            deferred.push_back(id);
            return std::nullopt;
        },
        [&](Server::RequestId id) {
            aborted.push_back(id);
            // Answering another deferred request from inside the notice is allowed.
            for (auto other : deferred)
                if (other != id) self->reply(other, Response::text(200, "from abort"));
        });
    self = &s;
    Loop loop(s);
    Conn gone(s.port());
    gone.send("GET /gone HTTP/1.1\r\nHost: test\r\n\r\n");
    ASSERT_TRUE(loop.until([&] { return s.waiting() == 1; }));
    auto stays = std::async(std::launch::async, [&] { return get(s.port(), "/stays"); });
    ASSERT_TRUE(loop.until([&] { return s.waiting() == 2; }));
    gone.close();
    // The hang-up wakes the loop, and so does the answer given from on_abort; both
    // connections end (the second when its client has read the answer and closes).
    ASSERT_TRUE(loop.strictly_until([&] { return !aborted.empty() && s.connections() == 0; }, 2000ms));
    Reply r = stays.get();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "from abort\n");
    ASSERT_EQ(deferred.size(), 2u);
    EXPECT_EQ(aborted, std::vector<Server::RequestId>{deferred[0]});
    s.reply(deferred[0], Response::text(200, "too late"));  // dead id: ignored
    EXPECT_EQ(s.waiting(), 0u);
    for (int i = 0; i < 20; ++i) loop.once(1);
    EXPECT_EQ(aborted.size(), 1u);  // not again when MHD closes the connection
}

TEST(HttpServer, HeadLargerThanMemoryLimitIsRefused) {
    Server::Limits l = small_limits();
    l.head_memory = 8 << 10;
    Echo e(l);
    Loop loop(e.server);
    std::string big(16 << 10, 'a');
    Reply header = loop.client([&] {
        Conn c(e.server.port());
        c.send("GET / HTTP/1.1\r\nHost: test\r\nX-Big: " + big + "\r\n\r\n");
        Reply r = c.read();
        EXPECT_TRUE(c.closed_by_server());
        return r;
    });
    // MHD 0.9.75 answers 431 for a header line that does not fit.
    EXPECT_EQ(header.status, 431);
    std::string many_lines = "GET / HTTP/1.1\r\nHost: test\r\n";
    for (int i = 0; i < 1000; ++i) many_lines += "X-H" + std::to_string(i) + ": v\r\n";
    Reply many = loop.client([&] { return ask(e.server.port(), many_lines + "\r\n"); });
    EXPECT_EQ(many.status, 431);
    Reply uri = loop.client([&] { return get(e.server.port(), "/" + big); });
    EXPECT_EQ(uri.status, 414);  // MHD's answer to a request line that does not fit
    EXPECT_TRUE(e.seen.empty());
    Reply ok = loop.client([&] { return get(e.server.port(), "/ok"); });
    EXPECT_EQ(ok.status, 200);
}

TEST(HttpServer, BodyOverLimitIs413) {
    Server::Limits l = small_limits();
    l.max_body = 1000;
    Echo e(l);
    Loop loop(e.server);
    // Refused by its Content-Length, before the body is sent.
    Reply early = loop.client([&] {
        return ask(e.server.port(), "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 5000\r\n\r\n");
    });
    EXPECT_EQ(early.status, 413);
    // Exactly the limit passes.
    Reply fits = loop.client([&] {
        return ask(e.server.port(),
                   "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'b'));
    });
    EXPECT_EQ(fits.status, 200);
    // Chunked, no length: counted as it comes, answered at its end.
    auto chunked = [&](size_t n) {
        return loop.client([&] {
            Conn c(e.server.port());
            c.send("POST /x HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n");
            for (size_t sent = 0; sent < n; sent += 500) c.send("1f4\r\n" + std::string(500, 'c') + "\r\n");
            c.send("0\r\n\r\n");
            return c.read();
        });
    };
    EXPECT_EQ(chunked(1500).status, 413);
    // Far over the limit: no more reading to the end, the connection is closed.
    EXPECT_EQ(chunked(100000).status, 0);
    ASSERT_EQ(e.seen.size(), 1u);
    EXPECT_EQ(e.seen[0].body.size(), 1000u);
    EXPECT_EQ(loop.client([&] { return get(e.server.port(), "/ok"); }).status, 200);
}

TEST(HttpServer, IdleConnectionsClosedButDeferredOnesWait) {
    Server::Limits l = small_limits();
    l.idle_timeout_s = 1;
    std::vector<Server::RequestId> deferred;
    Server s(
        "127.0.0.1:0", l,
        [&](Server::RequestId id, const Request&) -> std::optional<Response> {
            deferred.push_back(id);
            return std::nullopt;
        },
        [](Server::RequestId) { ADD_FAILURE() << "aborted"; });
    Loop loop(s);
    auto waits = std::async(std::launch::async, [&] { return get(s.port(), "/wait"); });
    ASSERT_TRUE(loop.until([&] { return s.waiting() == 1; }));
    auto t0 = std::chrono::steady_clock::now();
    auto silent = std::async(std::launch::async, [&] {
        Conn c(s.port());
        return c.closed_by_server();
    });
    auto slow_head = std::async(std::launch::async, [&] {  // slow loris: a head that never ends
        Conn c(s.port());
        c.send("GET / HTTP/1.1\r\nHost: te");
        return c.closed_by_server();
    });
    ASSERT_TRUE(loop.until([&] { return s.connections() == 3; }));
    int t = s.timeout_ms();  // when the silent ones are due
    EXPECT_GE(t, 0);
    EXPECT_LE(t, 1000);
    ASSERT_TRUE(loop.until([&] {
        return silent.wait_for(0ms) == std::future_status::ready &&
               slow_head.wait_for(0ms) == std::future_status::ready;
    }));
    auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_TRUE(silent.get());
    EXPECT_TRUE(slow_head.get());
    EXPECT_GE(waited, 900ms);
    EXPECT_LT(waited, 3500ms);
    // The deferred request outlived the idle timeout and still gets its answer.
    ASSERT_EQ(deferred.size(), 1u);
    s.reply(deferred[0], Response::text(200, "done"));
    ASSERT_TRUE(loop.until([&] { return waits.wait_for(0ms) == std::future_status::ready; }));
    EXPECT_EQ(waits.get().body, "done\n");
}

TEST(HttpServer, MalformedRequestsAreRefusedAndServingGoesOn) {
    Server::Limits l = small_limits();
    // libmicrohttpd reads with edge-triggered epoll and takes a short read for "drained": the
    // end of a client that sent an incomplete head and its FIN in one go goes unseen, and the
    // connection stays until the idle timeout. Short here, so the test does not wait long.
    l.idle_timeout_s = 1;
    l.max_per_ip = 1024;
    l.max_connections = 1024;
    Echo e(l);
    Loop loop(e.server);
    const std::string junk[] = {
        "GARBAGE\r\n\r\n",
        std::string("\x00\x01\x02\xff\xfe\r\n\r\n", 8),
        std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),  // a TLS hello
        "GET /\r\n\r\n",                                                  // no version
        "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        "GET / HTTP/1.1\r\nno colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "\r\n\r\n\r\n",
        " / HTTP/1.1\r\n\r\n",
    };
    // Each answered with a 4xx (505 for the version), or hung up on; never a handler call.
    // In parallel: some wait for the idle timeout (above).
    std::vector<std::future<int>> statuses;
    for (const auto& j : junk)
        statuses.push_back(std::async(std::launch::async, [&e, &j] {
            Conn c(e.server.port());
            c.send(j);
            c.shutdown_write();
            return c.read().status;
        }));
    ASSERT_TRUE(loop.until([&] {
        for (auto& f : statuses)
            if (f.wait_for(0ms) != std::future_status::ready) return false;
        return true;
    }));
    for (size_t i = 0; i < statuses.size(); ++i) {
        int st = statuses[i].get();
        EXPECT_TRUE(st == 0 || (st >= 400 && st < 500) || st == 505) << "junk #" << i << " got " << st;
    }
    for (const auto& r : e.seen) ADD_FAILURE() << "handler saw " << r.method << " " << r.path;
    EXPECT_EQ(loop.client([&] { return get(e.server.port(), "/ok"); }).status, 200);
    e.seen.clear();

    // A thousand of them (cycling, some with a valid request line and junk after), the client
    // hanging up at once; then a good request.
    loop.client([&] {
        for (int i = 0; i < 1000; ++i) {
            Conn c(e.server.port());
            std::string s = junk[size_t(i) % std::size(junk)];
            if (i % 3 == 0)
                s = "GET /" + std::to_string(i) + " HTTP/1.1\r\n" + s.substr(0, size_t(i) % s.size());
            c.send(s);
        }
        return 0;
    });
    EXPECT_EQ(loop.client([&] { return get(e.server.port(), "/still"); }).status, 200);
    // A request line with a bit of junk can be a whole request ("GET /9 HTTP/1.1\r\n\r\n").
    ASSERT_FALSE(e.seen.empty());
    EXPECT_EQ(e.seen.back().path, "/still");
    for (size_t i = 0; i + 1 < e.seen.size(); ++i)
        EXPECT_EQ(e.seen[i].path.find_first_not_of("/0123456789"), std::string::npos) << e.seen[i].path;
    EXPECT_TRUE(loop.until([&] { return e.server.connections() == 0; }));
}

TEST(HttpServer, ClientClosingMidResponseDoesNotKillTheProcess) {
    std::string big(8 << 20, 'x');
    Server s(
        "127.0.0.1:0", small_limits(),
        [&](Server::RequestId, const Request&) { return Response::text(200, big); },
        [](Server::RequestId) {});
    Loop loop(s);
    for (int i = 0; i < 3; ++i) {
        Conn c(s.port());
        c.send("GET /big HTTP/1.1\r\nHost: test\r\n\r\n");
        ASSERT_TRUE(loop.until([&] { return s.connections() == 1; }));
        for (int k = 0; k < 5; ++k) loop.once(1);  // the server starts writing
        c.close();                                 // with most of the body unread: RST, EPIPE
        ASSERT_TRUE(loop.until([&] { return s.connections() == 0; }));
    }
    // A whole one, written in many pieces, each when the socket takes more.
    auto whole = std::async(std::launch::async, [&] { return get(s.port(), "/big"); });
    ASSERT_TRUE(loop.until([&] { return s.connections() == 1; }));
    EXPECT_TRUE(loop.strictly_until([&] { return s.connections() == 0; }, 3000ms));
    Reply r = whole.get();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body.size(), big.size() + 1);
}

TEST(HttpServer, PerIpLimitRefusesExtraConnections) {
    Server::Limits l = small_limits();
    l.max_per_ip = 2;
    Echo e(l);
    Loop loop(e.server);
    Conn a(e.server.port()), b(e.server.port());
    ASSERT_TRUE(loop.until([&] { return e.server.connections() == 2; }));
    bool third_closed = loop.client([&] {
        Conn c(e.server.port());
        return c.closed_by_server();
    });
    EXPECT_TRUE(third_closed);
    a.close();
    ASSERT_TRUE(loop.until([&] { return e.server.connections() == 1; }));
    EXPECT_EQ(loop.client([&] { return get(e.server.port(), "/ok"); }).status, 200);
}

TEST(HttpServer, HandlerExceptionIs500) {
    Server s(
        "127.0.0.1:0", small_limits(),
        [](Server::RequestId, const Request&) -> std::optional<Response> { throw Error("boom"); },
        [](Server::RequestId) {});
    Loop loop(s);
    Reply r = loop.client([&] { return get(s.port(), "/"); });
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(r.body, "internal error: boom\n");
}

TEST(HttpServer, DestroyedWithDeferredRequests) {
    bool aborted = false;
    std::future<Reply> pending;
    {
        Server s(
            "127.0.0.1:0", small_limits(),
            [](Server::RequestId, const Request&) -> std::optional<Response> { return std::nullopt; },
            [&](Server::RequestId) { aborted = true; });
        Loop loop(s);
        pending = std::async(std::launch::async, [port = s.port()] { return get(port, "/never"); });
        ASSERT_TRUE(loop.until([&] { return s.waiting() == 1; }));
    }
    EXPECT_EQ(pending.get().status, 0);  // hung up on, not answered
    EXPECT_FALSE(aborted);               // the owner is going away: no notices
}

TEST(HttpServer, ListenAddresses) {
    auto usage = [](const std::string& listen) {
        try {
            Server s(
                listen, small_limits(), [](Server::RequestId, const Request&) { return Response(); },
                [](Server::RequestId) {});
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), Error::Kind::Usage) << listen;
            EXPECT_EQ(std::string(e.what()).rfind("--listen: ", 0), 0u) << e.what();
            return;
        }
        ADD_FAILURE() << listen << " was accepted";
    };
    for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:http",
                            "127.0.0.1:-1", "127.0.0.1:80x", "1.2.3:80", "256.0.0.1:80", "example.com:80",
                            ":80", "[::1:80", "[zz]:80", "::1:80", "[127.0.0.1]:80"})
        usage(bad);

    auto handler = [](Server::RequestId, const Request&) { return Response::text(200, "hi"); };
    Server a("localhost:0", small_limits(), handler, [](Server::RequestId) {});
    Loop loop(a);
    EXPECT_EQ(loop.client([&] { return get(a.port(), "/"); }).body, "hi\n");

    // The port in use: a runtime error naming the address.
    std::string taken = "127.0.0.1:" + std::to_string(a.port());
    try {
        Server b(taken, small_limits(), handler, [](Server::RequestId) {});
        ADD_FAILURE() << "bound twice";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Runtime);
        EXPECT_NE(std::string(e.what()).find(taken), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(strerror(EADDRINUSE)), std::string::npos) << e.what();
    }

    Fd v6(socket(AF_INET6, SOCK_STREAM, 0));
    if (!v6) GTEST_SKIP() << "no IPv6";
    std::string peer;
    Server c(
        "[::1]:0", small_limits(),
        [&](Server::RequestId, const Request& r) {
            peer = r.peer;
            return Response::text(200, "v6");
        },
        [](Server::RequestId) {});
    Loop loop6(c);
    Reply r = loop6.client([&] { return ask(c.port(), "GET / HTTP/1.1\r\nHost: test\r\n\r\n", true); });
    EXPECT_EQ(r.body, "v6\n");
    EXPECT_EQ(peer.rfind("[::1]:", 0), 0u) << peer;
}
