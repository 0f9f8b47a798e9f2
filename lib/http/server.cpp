// The HTTP server of `serve` on GNU libmicrohttpd in "external select" mode: MHD runs on the
// sockets it names with MHD_get_fdset2, which we keep, level-triggered, in an epoll set of our
// own (mhd_fds); ours holds that set, the sockets of deferred requests, which MHD stops
// watching while they are suspended, and an eventfd that wakes the loop when one is resumed
// (see Server::Impl::run). Select mode caps sockets below FD_SETSIZE (1024): serve keeps few
// files open, and the connection limit is 256.
#include "http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/fd.h"
#include "core/text.h"
#include "http/mhd_lib.h"
#include "perf-prof/error.h"

namespace perfprof::http {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// application/x-www-form-urlencoded decoding; a '%' not followed by two hex digits stays as is
// (Go's pprof never sends one, and a lenient reading beats rejecting the request).
std::string form_decode(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '+') {
            out += ' ';
        } else if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
            out += char(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

bool parse_port(std::string_view s, uint16_t& port) {
    uint64_t v = 0;
    if (s.size() > 5 || !core::parse_dec(s, v) || v > 65535) return false;
    port = uint16_t(v);
    return true;
}

union SockAddr {
    sockaddr sa;
    sockaddr_in in;
    sockaddr_in6 in6;
};

// "ADDR:PORT" with ADDR a dotted quad, "localhost" or "[IPv6]".
SockAddr parse_listen(const std::string& listen) {
    auto bad = [&](const char* why) {
        return Error::usage("--listen: '" + listen + "': " + why,
                            "expected ADDR:PORT, e.g. 127.0.0.1:6060 or [::1]:6060 (port 0: any free port)");
    };
    SockAddr a{};
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    std::string host = listen.substr(0, colon);
    uint16_t port = 0;
    if (!parse_port(std::string_view(listen).substr(colon + 1), port)) throw bad("bad port");
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        std::string v6 = host.substr(1, host.size() - 2);
        a.in6.sin6_family = AF_INET6;
        a.in6.sin6_port = htons(port);
        if (inet_pton(AF_INET6, v6.c_str(), &a.in6.sin6_addr) != 1) throw bad("bad IPv6 address");
        return a;
    }
    if (host.empty()) throw bad("no address (0.0.0.0 listens on every interface)");
    if (host == "localhost") host = "127.0.0.1";
    a.in.sin_family = AF_INET;
    a.in.sin_port = htons(port);
    // inet_pton alone takes only the full dotted quad, unlike inet_aton's "127.1" or hex forms.
    if (inet_pton(AF_INET, host.c_str(), &a.in.sin_addr) != 1) throw bad("bad IPv4 address");
    return a;
}

std::string peer_name(MHD_Connection* c) {
    const MHD_ConnectionInfo* ci = mhd().get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr) return "";
    char buf[INET6_ADDRSTRLEN] = "";
    const sockaddr* sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
        return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
    }
    if (sa->sa_family == AF_INET6) {
        auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
        return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
    }
    return "";
}

void quiet_log(void*, const char*, va_list) {}

// MHD's default prints and aborts; this one says who failed in our own format first. Throwing
// is no option: the stack between here and us is C.
void panic(void*, const char* file, unsigned line, const char* reason) {
    std::fprintf(stderr, "perf-prof: libmicrohttpd: internal error at %s:%u%s%s\n", file ? file : "?", line,
                 reason ? ": " : "", reason ? reason : "");
    std::abort();
}

struct DaemonStop {
    void operator()(MHD_Daemon* d) const noexcept { mhd().stop_daemon(d); }
};

// The state of one request, from its request line (MHD's URI log callback) to MHD's
// completion notice: MHD keeps the pointer as the request's con_cls.
struct Ctx {
    enum State {
        Head,      // the request line and headers arrived; the body may follow
        Body,      // reading the body
        Waiting,   // handed to the handler, which deferred it: the connection is suspended
        Replied,   // reply() came: queue `reply` when MHD calls again after the resume
        Aborted,   // the client went away while waiting: close the connection
        Answered,  // a response is queued
    };
    State state = Head;
    std::string target;  // the request-target as sent: path and query, still %-encoded
    std::string body;
    size_t discarded = 0;  // body bytes past the limit, read and dropped to answer 413
    Server::RequestId id = 0;
    MHD_Connection* conn = nullptr;
    bool suspended = false;
    int sock = -1;  // watched by our epoll while suspended
    std::optional<Response> reply;
};

}  // namespace

std::optional<std::string> Request::arg(std::string_view name) const {
    std::string_view q = query;
    size_t pos = 0;
    while (pos <= q.size()) {
        size_t amp = q.find('&', pos);
        if (amp == std::string_view::npos) amp = q.size();
        std::string_view pair = q.substr(pos, amp - pos);
        pos = amp + 1;
        if (pair.empty()) continue;
        size_t eq = pair.find('=');
        if (form_decode(pair.substr(0, eq)) != name) continue;
        return eq == std::string_view::npos ? std::string() : form_decode(pair.substr(eq + 1));
    }
    return std::nullopt;
}

std::optional<std::string> Request::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (iequals(k, name)) return v;
    return std::nullopt;
}

Response Response::text(int status, std::string body) {
    if (body.empty() || body.back() != '\n') body += '\n';
    Response r;
    r.status = status;
    r.body = std::move(body);
    return r;
}

struct Server::Impl {
    Limits limits;
    Handler on_request;
    Aborted on_abort;
    core::Fd epoll;
    // MHD's sockets as it last asked for them (MHD_get_fdset2), level-triggered: with its own
    // epoll MHD reads edge-triggered and takes a short read for "nothing more", so a client
    // that sends its last bytes and its FIN together (a half-close, junk and a hang-up) was
    // noticed only at the idle timeout. Select semantics read until the EOF is seen.
    core::Fd mhd_fds;
    std::unordered_map<int, uint32_t> registered;  // fd → events in mhd_fds
    // MHD 0.9.75 makes no wake-up channel of its own without a thread of its own: after
    // MHD_resume_connection, neither its epoll fd nor MHD_get_timeout tells the loop to run.
    core::Fd wake;
    uint16_t port = 0;
    static constexpr uint64_t kMhdTag = 0, kWakeTag = ~uint64_t(0);  // the others are request ids
    RequestId next_id = 1;
    std::unordered_map<RequestId, Ctx*> waiting;  // deferred requests not answered yet
    bool closing = false;
    // Last, so destroyed first: its completion notices use the members above.
    std::unique_ptr<MHD_Daemon, DaemonStop> daemon;

    void watch(Ctx* c) {
        const MHD_ConnectionInfo* ci = mhd().get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci) return;
        epoll_event ev{};
        // No EPOLLIN: a pipelined next request is not a hang-up. EPOLLRDHUP also takes a
        // half-close (shutdown(SHUT_WR)) for one, which no HTTP client of ours does.
        ev.events = EPOLLRDHUP;
        ev.data.u64 = c->id;
        if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, ci->connect_fd, &ev) == 0) c->sock = ci->connect_fd;
    }
    void unwatch(Ctx* c) {
        if (c->sock >= 0) epoll_ctl(epoll.get(), EPOLL_CTL_DEL, c->sock, nullptr);
        c->sock = -1;
    }

    // A response owned by MHD: it keeps the body string until the last connection lets go.
    static MHD_Result queue(MHD_Connection* conn, Response&& r) {
        auto* body = new std::string(std::move(r.body));
        MHD_Response* resp = mhd().create_response(
            body->size(), body->data(), [](void* p) { delete static_cast<std::string*>(p); }, body);
        if (!resp) {
            delete body;
            return MHD_NO;
        }
        // A header MHD refuses (a newline in a value, one it sets itself) is dropped rather than
        // failing the whole answer.
        mhd().add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
        mhd().add_response_header(resp, "X-Content-Type-Options", "nosniff");
        for (const auto& [k, v] : r.headers) mhd().add_response_header(resp, k.c_str(), v.c_str());
        MHD_Result ok = mhd().queue_response(conn, unsigned(r.status), resp);
        mhd().destroy_response(resp);
        return ok;
    }

    static Response too_large(size_t max) {
        return Response::text(MHD_HTTP_CONTENT_TOO_LARGE,
                              "request body too large (at most " + std::to_string(max) + " bytes)");
    }

    MHD_Result access(MHD_Connection* conn, const char* url, const char* method, const char* data,
                      size_t* size, void** con_cls) {
        auto* c = static_cast<Ctx*>(*con_cls);
        if (!c) {  // the URI log callback always runs first; this is only a fallback
            c = new Ctx;
            c->target = url;
            *con_cls = c;
        }
        if (closing) return MHD_NO;
        switch (c->state) {
            case Ctx::Head: {
                c->state = Ctx::Body;
                c->conn = conn;
                // Refused before a byte of the body is read; MHD closes the connection after the
                // answer since the body is left unread.
                const char* len =
                    mhd().lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (len && std::strtoull(len, nullptr, 10) > limits.max_body) {
                    c->state = Ctx::Answered;
                    return queue(conn, too_large(limits.max_body));
                }
                // MHD's first call comes without data; should one ever bring some, it is body.
                if (!*size) return MHD_YES;
                [[fallthrough]];
            }
            case Ctx::Body:
                if (*size) {
                    // MHD cannot answer in the middle of a body (a chunked one, without a length):
                    // drop the rest and answer 413 at its end, or hang up if it goes on and on.
                    if (c->discarded || c->body.size() + *size > limits.max_body) {
                        c->discarded += *size;
                        std::string().swap(c->body);
                        if (c->discarded > limits.max_body) return MHD_NO;
                    } else {
                        c->body.append(data, *size);
                    }
                    *size = 0;
                    return MHD_YES;
                }
                if (c->discarded) {
                    c->state = Ctx::Answered;
                    return queue(conn, too_large(limits.max_body));
                }
                return dispatch(c, method);
            case Ctx::Waiting:
                return MHD_YES;
            case Ctx::Replied: {
                c->state = Ctx::Answered;
                Response r = std::move(*c->reply);
                c->reply.reset();
                return queue(conn, std::move(r));
            }
            case Ctx::Aborted:
                return MHD_NO;
            case Ctx::Answered:
                break;
        }
        return MHD_YES;
    }

    MHD_Result dispatch(Ctx* c, const char* method) {
        Request req;
        req.method = method;
        size_t q = c->target.find('?');
        req.path = c->target.substr(0, q);
        if (q != std::string::npos) req.query = c->target.substr(q + 1);
        req.body = std::move(c->body);
        req.peer = peer_name(c->conn);
        mhd().get_connection_values_n(
            c->conn, MHD_HEADER_KIND,
            [](void* cls, MHD_ValueKind, const char* k, size_t kn, const char* v, size_t vn) {
                static_cast<Request*>(cls)->headers.emplace_back(std::string(k, kn), std::string(v, vn));
                return MHD_YES;
            },
            &req);

        // Registered before the call so that a reply() from inside the handler is not lost.
        c->id = next_id++;
        c->state = Ctx::Waiting;
        waiting[c->id] = c;
        std::optional<Response> r;
        try {
            r = on_request(c->id, req);
        } catch (const std::exception& e) {
            r = Response::text(500, std::string("internal error: ") + e.what());
        } catch (...) {
            r = Response::text(500, "internal error");
        }
        if (c->state == Ctx::Replied) {
            r = std::move(c->reply);
            c->reply.reset();
        }
        if (r) {
            waiting.erase(c->id);
            c->state = Ctx::Answered;
            return queue(c->conn, std::move(*r));
        }
        mhd().suspend_connection(c->conn);
        c->suspended = true;
        watch(c);
        return MHD_YES;
    }

    void reply(RequestId id, Response&& r) {
        auto it = waiting.find(id);
        if (it == waiting.end()) return;
        Ctx* c = it->second;
        waiting.erase(it);
        c->reply = std::move(r);
        c->state = Ctx::Replied;
        resume(c);
    }

    // MHD calls access() again for a resumed connection. A reply() from inside the handler
    // comes before the suspension: nothing to resume then.
    void resume(Ctx* c) {
        if (!c->suspended) return;
        c->suspended = false;
        unwatch(c);
        mhd().resume_connection(c->conn);
        eventfd_write(wake.get(), 1);
    }

    void abort(RequestId id) {
        auto it = waiting.find(id);
        if (it == waiting.end()) return;
        Ctx* c = it->second;
        waiting.erase(it);
        c->state = Ctx::Aborted;
        resume(c);  // MHD calls access() again, which closes the connection
        notify_abort(id);
    }
    void notify_abort(RequestId id) {
        if (closing || !on_abort) return;
        try {
            on_abort(id);
        } catch (...) {
            // The abort notice has no one to report to; the request is gone either way.
        }
    }

    void completed(Ctx* c, MHD_RequestTerminationCode) {
        if (!c) return;
        // A deferred request that MHD ends without our answer (on its own close): the same
        // notice as a hang-up seen by run().
        if (c->id && c->state == Ctx::Waiting && waiting.erase(c->id)) {
            unwatch(c);
            notify_abort(c->id);
        }
        delete c;
    }

    void run() {
        epoll_event ev[64];
        int n = epoll_wait(epoll.get(), ev, 64, 0);
        // Ids first, then the calls: on_abort may reply() or abort others and change `waiting`.
        RequestId gone[64];
        int ngone = 0;
        for (int i = 0; i < n; ++i) {
            if (ev[i].data.u64 == kWakeTag) {
                eventfd_t v;
                eventfd_read(wake.get(), &v);
            } else if (ev[i].data.u64 != kMhdTag) {
                gone[ngone++] = ev[i].data.u64;
            }
        }
        for (int i = 0; i < ngone; ++i) abort(gone[i]);
        fd_set rs, ws, es;
        MHD_socket max = 0;
        FD_ZERO(&rs);
        FD_ZERO(&ws);
        FD_ZERO(&es);
        if (mhd().get_fdset2(daemon.get(), &rs, &ws, &es, &max, FD_SETSIZE) == MHD_YES) {
            timeval now{0, 0};
            if (select(max + 1, &rs, &ws, &es, &now) < 0) {
                FD_ZERO(&rs);
                FD_ZERO(&ws);
                FD_ZERO(&es);
            }
            mhd().run_from_select(daemon.get(), &rs, &ws, &es);
        } else {
            mhd().run(daemon.get());
        }
        sync();
    }

    // mhd_fds ← the sockets MHD waits on now.
    void sync() {
        fd_set rs, ws, es;
        MHD_socket max = 0;
        FD_ZERO(&rs);
        FD_ZERO(&ws);
        FD_ZERO(&es);
        if (mhd().get_fdset2(daemon.get(), &rs, &ws, &es, &max, FD_SETSIZE) != MHD_YES) return;
        std::unordered_map<int, uint32_t> want;
        for (int fd = 0; fd <= max; ++fd) {
            const uint32_t e = (FD_ISSET(fd, &rs) ? EPOLLIN : 0u) | (FD_ISSET(fd, &ws) ? EPOLLOUT : 0u) |
                               (FD_ISSET(fd, &es) ? EPOLLPRI : 0u);
            if (e) want[fd] = e;
        }
        for (auto it = registered.begin(); it != registered.end();) {
            if (want.count(it->first)) {
                ++it;
                continue;
            }
            epoll_ctl(mhd_fds.get(), EPOLL_CTL_DEL, it->first, nullptr);  // may be closed already
            it = registered.erase(it);
        }
        for (const auto& [fd, e] : want) {
            auto it = registered.find(fd);
            if (it != registered.end() && it->second == e) continue;
            epoll_event ev{};
            ev.events = e;
            ev.data.fd = fd;
            // A closed fd leaves the epoll set by itself and its number may come back as a new
            // socket: ADD and MOD each fall back on the other.
            const int op = it == registered.end() ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
            if (epoll_ctl(mhd_fds.get(), op, fd, &ev) != 0)
                epoll_ctl(mhd_fds.get(), op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
            registered[fd] = e;
        }
    }
};

Server::Server(const std::string& listen, const Limits& limits, Handler on_request, Aborted on_abort)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    s.limits = limits;
    s.on_request = std::move(on_request);
    s.on_abort = std::move(on_abort);
    SockAddr addr = parse_listen(listen);
    bool v6 = addr.sa.sa_family == AF_INET6;
    mhd().set_panic_func(panic, nullptr);

    // Our own listen socket: MHD_start_daemon fails without saying why (EADDRINUSE, EACCES).
    core::Fd sock(socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!sock) throw Error::sys(errno, "cannot listen on " + listen + ": socket");
    int one = 1;
    setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6) setsockopt(sock.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(sock.get(), &addr.sa, v6 ? sizeof addr.in6 : sizeof addr.in) != 0)
        throw Error::sys(errno, "cannot listen on " + listen);
    if (::listen(sock.get(), SOMAXCONN) != 0) throw Error::sys(errno, "cannot listen on " + listen);
    SockAddr bound{};
    socklen_t len = sizeof bound;
    if (getsockname(sock.get(), &bound.sa, &len) != 0) throw Error::sys(errno, "getsockname " + listen);
    s.port = ntohs(v6 ? bound.in6.sin6_port : bound.in.sin_port);

    auto access = [](void* cls, MHD_Connection* conn, const char* url, const char* method, const char*,
                     const char* data, size_t* size, void** con_cls) {
        return static_cast<Impl*>(cls)->access(conn, url, method, data, size, con_cls);
    };
    auto uri_log = [](void*, const char* uri, MHD_Connection*) -> void* {
        auto* c = new Ctx;
        c->target = uri;
        return c;
    };
    auto completed = [](void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode toe) {
        static_cast<Impl*>(cls)->completed(static_cast<Ctx*>(*con_cls), toe);
        *con_cls = nullptr;
    };
    unsigned flags = MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0);
    int listen_fd = sock.get();
    s.daemon.reset(mhd().start_daemon(flags, 0, nullptr, nullptr, access, &s,
                                    // First, so that nothing is printed during the start either.
                                    MHD_OPTION_EXTERNAL_LOGGER, quiet_log, nullptr,  //
                                    MHD_OPTION_LISTEN_SOCKET, listen_fd,             //
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, size_t(limits.head_memory),
                                    MHD_OPTION_CONNECTION_TIMEOUT, unsigned(limits.idle_timeout_s),  //
                                    MHD_OPTION_CONNECTION_LIMIT, unsigned(limits.max_connections),   //
                                    MHD_OPTION_PER_IP_CONNECTION_LIMIT, unsigned(limits.max_per_ip),
                                    MHD_OPTION_URI_LOG_CALLBACK, +uri_log, nullptr,  //
                                    MHD_OPTION_NOTIFY_COMPLETED, +completed, &s,     //
                                    MHD_OPTION_END));
    if (!s.daemon) throw Error("cannot start the HTTP server on " + listen + " (libmicrohttpd refused)");
    sock.release();  // MHD closes it when it stops

    s.epoll.reset(epoll_create1(EPOLL_CLOEXEC));
    s.mhd_fds.reset(epoll_create1(EPOLL_CLOEXEC));
    if (!s.epoll || !s.mhd_fds) throw Error::sys(errno, "epoll_create1");
    s.wake.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!s.wake) throw Error::sys(errno, "eventfd");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = Impl::kMhdTag;
    if (epoll_ctl(s.epoll.get(), EPOLL_CTL_ADD, s.mhd_fds.get(), &ev) != 0)
        throw Error::sys(errno, "epoll_ctl (libmicrohttpd's sockets)");
    ev.data.u64 = Impl::kWakeTag;
    if (epoll_ctl(s.epoll.get(), EPOLL_CTL_ADD, s.wake.get(), &ev) != 0) throw Error::sys(errno, "epoll_ctl");
    s.sync();
}

Server::~Server() {
    Impl& s = *impl_;
    // MHD must not be stopped with suspended connections: resume them all and let one run close
    // them (access() answers MHD_NO once closing). Nobody is told: the owner is going away.
    s.closing = true;
    for (auto& [id, c] : s.waiting) {
        c->state = Ctx::Aborted;
        s.resume(c);
    }
    s.waiting.clear();
    if (s.daemon) mhd().run(s.daemon.get());
}

uint16_t Server::port() const {
    return impl_->port;
}

int Server::fd() const {
    return impl_->epoll.get();
}

void Server::run() {
    impl_->run();
}

int Server::timeout_ms() const {
    MHD_UNSIGNED_LONG_LONG t = 0;
    if (mhd().get_timeout(impl_->daemon.get(), &t) != MHD_YES) return -1;
    return t > static_cast<MHD_UNSIGNED_LONG_LONG>(INT_MAX) ? INT_MAX : int(t);
}

void Server::reply(RequestId id, Response r) {
    impl_->reply(id, std::move(r));
}

size_t Server::waiting() const {
    return impl_->waiting.size();
}

size_t Server::connections() const {
    const MHD_DaemonInfo* di = mhd().get_daemon_info(impl_->daemon.get(), MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return di ? di->num_connections : 0;
}

}  // namespace perfprof::http
