// The HTTP/1.1 server of `serve`: GNU libmicrohttpd (Debian's libmicrohttpd-dev), driven from the
// caller's event loop rather than threads of its own, so that a request can wait for a profile
// that takes seconds while every other connection is served. The library parses requests and
// enforces the limits (head size, body size, idle time, connections); this layer turns its
// callbacks into one Request per complete request and answers with a Response, now or later.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace perfprof::http {

struct Request {
    std::string method;  // "GET", "POST", "HEAD", ...
    std::string path;    // the URL's path as sent, without the query ("/pid/12/pprof/heap")
    std::string query;   // the text after '?', raw; "" when none
    std::string body;    // the whole body (POST), at most Limits::max_body bytes
    std::string peer;    // the client's address, "127.0.0.1:PORT"
    std::vector<std::pair<std::string, std::string>> headers;

    // The value of query parameter `name`, %-decoded; nullopt when absent ("a=1&b" gives b "").
    std::optional<std::string> arg(std::string_view name) const;
    // A request header's value, name compared without case; nullopt when absent.
    std::optional<std::string> header(std::string_view name) const;
};

struct Response {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::vector<std::pair<std::string, std::string>> headers;  // added to the standard ones
    std::string body;

    // A plain-text response; the body gets a final newline when it lacks one.
    static Response text(int status, std::string body);
};

class Server {
public:
    struct Limits {
        size_t max_body = size_t(16) << 20;      // a larger body is answered 413
        size_t head_memory = size_t(64) << 10;   // a request head that does not fit is answered 431
        unsigned idle_timeout_s = 15;            // a connection silent this long is closed
        unsigned max_connections = 256;          // more wait in the listen queue
        unsigned max_per_ip = 128;
    };
    using RequestId = uint64_t;
    // Called once per complete request. Returns the response, or nullopt to answer later with
    // reply(): the connection waits (the idle timeout does not apply to it), and if the client
    // goes away first, on_abort(id) is called and the id is dead.
    using Handler = std::function<std::optional<Response>(RequestId, const Request&)>;
    using Aborted = std::function<void(RequestId)>;

    // Listens on "ADDR:PORT" ("127.0.0.1:0" picks a free port, "[::1]:PORT" for IPv6). Throws
    // Error (a usage error for a malformed address) when it cannot.
    Server(const std::string& listen, const Limits& limits, Handler on_request, Aborted on_abort);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    uint16_t port() const;
    // An fd that is readable when there is work: watch it (EPOLLIN) and call run() then.
    int fd() const;
    // Does what is ready (accepts, reads, writes, timeouts, clients gone). Never blocks.
    void run();
    // Milliseconds until run() is due even without activity (a timeout); -1 when none.
    int timeout_ms() const;
    // Answers a request the handler deferred; ignored for an aborted or answered id.
    void reply(RequestId id, Response r);
    // Deferred requests not answered yet.
    size_t waiting() const;
    // Connections open now (for tests and -v).
    size_t connections() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace perfprof::http
