// serve: pprof's remote endpoints for processes of this host, from the outside (issue 16).
// gperftools' /pprof/{profile,heap,growth,symbol,cmdline} and Go's /debug/pprof/{profile,heap,
// allocs,symbol,cmdline}, for the processes named with -p or the command launched, or for
// every process behind a secret path prefix (--all). CPU profiles run in a child process per
// request (serve/profile_job); heap profiles from the heap agent, preloaded into the command
// launched or injected on the first heap request, else from eBPF uprobes (serve/heap_target);
// symbols from the shared symbol cache. One thread: the HTTP server (http/server), the
// profiles' pipes and the signals share one core::EventLoop.
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/event_loop.h"
#include "core/parse.h"
#include "core/time.h"
#include "http/route.h"
#include "http/server.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/proc_tasks.h"
#include "perf/workload.h"
#include "serve/heap_target.h"
#include "serve/process_info.h"
#include "serve/profile_job.h"
#include "stack/stack_printer.h"
#include "sym/pprof_symbols.h"
#include "sym/symbolizer.h"
#include "sym/syms.h"

namespace perfprof {

namespace {

struct ServeOptions final : ProfilerOptions {
    std::string listen = "127.0.0.1:6060";
    bool all = false;
    uint64_t freq = 100;
    uint64_t max_seconds = 300;
    uint64_t heap_rate = 512 * 1024;
    bool heap = false;
    uint64_t heap_idle_s = 300;
    uint64_t client_timeout_s = 15;
};

// A whole number from 1 to `max`.
uint64_t at_least_one(std::string_view text, const char* option, uint64_t max) {
    const uint64_t v = core::parse_bounded(text, option, max);
    if (v == 0) throw Error::usage(std::string("option `") + option + "' must be at least 1");
    return v;
}

using K = ArgKind;
using G = Group;
using Own = OwnOptions<ServeOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "listen", "ADDR:PORT", K::Value, false, G::Profiler,
             "address to serve on (default 127.0.0.1:6060; port 0:\n"
             "any free port, printed at start)",
             [](ServeOptions& o, OptionValue v) { o.listen = std::string(*v); }),
    Own::row(0, "all", "", K::Flag, false, G::Profiler,
             "serve every process of the host, under a secret path\n"
             "prefix printed at start",
             [](ServeOptions& o, OptionValue v) { o.all = flag_value(v); }),
    Own::row('F', "freq", "n", K::Value, false, G::Profiler,
             "CPU profiles: samples per second of CPU time (default\n"
             "100, at most 10000)",
             [](ServeOptions& o, OptionValue v) { o.freq = at_least_one(*v, "freq", 10000); }),
    Own::row(0, "max-seconds", "N", K::Value, false, G::Profiler,
             "the longest CPU profile a client may ask for (default\n"
             "300, at most 3600)",
             [](ServeOptions& o, OptionValue v) { o.max_seconds = at_least_one(*v, "max-seconds", 3600); }),
    Own::row(0, "heap-rate", "BYTES", K::Value, false, G::Profiler,
             "heap profiles: mean bytes between sampled allocations\n"
             "(default 524288, as tcmalloc and Go)",
             [](ServeOptions& o, OptionValue v) {
                 o.heap_rate = at_least_one(*v, "heap-rate", uint64_t(1) << 40);
             }),
    Own::row(0, "heap", "", K::Flag, false, G::Profiler,
             "attach the heap profiler at start, not at the first\n"
             "heap request",
             [](ServeOptions& o, OptionValue v) { o.heap = flag_value(v); }),
    Own::row(
        0, "heap-idle", "SECONDS", K::Value, false, G::Profiler,
        "detach the heap agent (or probes) of a process after\n"
        "this long without a heap request (default 300)",
        [](ServeOptions& o, OptionValue v) { o.heap_idle_s = at_least_one(*v, "heap-idle", 86400 * 365); }),
    Own::row(0, "client-timeout", "SECONDS", K::Value, false, G::Profiler,
             "close a connection silent this long (default 15)",
             [](ServeOptions& o, OptionValue v) {
                 o.client_timeout_s = at_least_one(*v, "client-timeout", 3600);
             }),
};

// 128 random bits as hex: the path prefix of --all.
std::string make_secret() {
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        const ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error::sys(errno, "serve: getrandom");
        got += size_t(n);
    }
    static const char kHex[] = "0123456789abcdef";
    std::string s;
    for (unsigned char c : b) {
        s += kHex[c >> 4];
        s += kHex[c & 15];
    }
    return s;
}

http::Response octets(std::string body, const char* filename) {
    http::Response r;
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Content-Disposition", std::string("attachment; filename=\"") + filename + "\"");
    r.body = std::move(body);
    return r;
}

http::Server::Limits limits(const ServeOptions& o) {
    http::Server::Limits l;
    l.idle_timeout_s = unsigned(o.client_timeout_s);
    return l;
}

http::Response html(std::string body) {
    http::Response r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::move(body);
    return r;
}

class Serve {
public:
    explicit Serve(const Options& opt)
        : opt_(opt),
          o_(opt.own_as<ServeOptions>()),
          http_(
              o_.listen, limits(o_),
              [this](http::Server::RequestId id, const http::Request& r) { return on_request(id, r); },
              [this](http::Server::RequestId id) { on_abort(id); }) {
        if (!opt.cpus.empty() || !opt.tids.empty() || opt.cgroups_given)
            throw Error::usage("serve: name processes with -p PID (or a command), or --all");
        const bool named = !opt.pids.empty(), launched = !opt.workload.empty();
        if (int(named) + int(launched) + int(o_.all) != 1)
            throw Error::usage("serve: give one of -p PID, a command after --, or --all");
        access_.all = o_.all;
        heap_settings_.rate = o_.heap_rate;
        heap_settings_.idle_ns = int64_t(o_.heap_idle_s) * 1'000'000'000;
        if (o_.all) access_.secret = make_secret();
        if (named) {
            for (int pid : core::parse_pid_list(opt.pids)) {
                if (!perf::task_alive(pid)) throw Error("serve: no process " + std::to_string(pid));
                access_.pids.push_back(pid);
            }
        }
        if (launched) {
            workload_ = std::make_unique<perf::Workload>(opt.workload);
            access_.pids.push_back(workload_->pid());
            // The heap agent goes in with the command (LD_PRELOAD); the eBPF fallback, when it
            // cannot, is attached before the command runs.
            serve::HeapTarget& h = heap_target(workload_->pid(), perf::command_path(opt.workload.front()));
            h.launch(o_.heap, [this](const std::string& name, const std::string& value) {
                return workload_->set_exec_env(name, value);
            });
            if (o_.heap && !h.has_agent()) h.attach();
            workload_->release();
            if (o_.heap) h.attach();
        } else if (o_.heap) {
            for (int pid : access_.pids) heap_target(pid).attach();
        }
    }

    int run() {
        setup_loop();
        std::string url = "http://" + listen_host() + ":" + std::to_string(http_.port()) + "/";
        if (o_.all) url += access_.secret + "/";
        std::printf("serving %s\n", url.c_str());
        for (int pid : access_.pids) {
            const serve::ProcessInfo p = serve::describe_process(pid, false);
            std::printf("  pid %d %s: %spid/%d/pprof/profile\n", pid, p.comm.c_str(), url.c_str(), pid);
        }
        std::fflush(stdout);

        next_house_ = core::monotonic_now_ns() + kHouseNs;
        loop_.run({[this] { return wait_ms(); }, [this] { after_wake(); }});
        shutdown();
        return 0;
    }

private:
    static constexpr int64_t kHouseNs = 1'000'000'000;

    using JobKey = std::pair<int, serve::ProfileKind>;  // target pid, what is sampled
    struct Job {
        http::Server::RequestId request;
        std::unique_ptr<serve::ProfileJob> job;
        std::string peer;
    };

    std::string listen_host() const {
        const size_t colon = o_.listen.rfind(':');
        std::string host = o_.listen.substr(0, colon);
        return host.empty() ? "127.0.0.1" : host;
    }

    // The HTTP server, the profiles' pipes and the stop signals share one loop.
    void setup_loop() {
        loop_.watch_signals({SIGINT, SIGTERM, SIGHUP}, [this](const signalfd_siginfo&) { loop_.stop(); });
        std::signal(SIGPIPE, SIG_IGN);
        loop_.add(http_.fd(), [this](uint32_t) { http_.run(); });
    }

    // After every wake-up: the server's timeouts, the profiles' deadlines, housekeeping.
    void after_wake() {
        http_.run();
        const int64_t now = core::monotonic_now_ns();
        for (auto& [key, j] : jobs_)
            if (!j.job->stopped() && now >= j.job->deadline_ns()) j.job->stop();
        if (now >= next_house_) {
            next_house_ = now + kHouseNs;
            housekeeping(now);
        }
    }

    int wait_ms() const {
        const int64_t now = core::monotonic_now_ns();
        int64_t due = next_house_;
        for (const auto& [key, j] : jobs_)
            if (!j.job->stopped()) due = std::min(due, j.job->deadline_ns());
        int ms = int(std::max<int64_t>(0, (due - now + 999'999) / 1'000'000));
        const int h = http_.timeout_ms();
        if (h >= 0) ms = std::min(ms, h);
        return ms;
    }

    // Ends every profile in progress (their clients get 503) and sends what is queued.
    void shutdown() {
        for (auto& [key, j] : jobs_) {
            loop_.remove(j.job->fd());
            http_.reply(j.request, http::Response::text(503, "503 serve is stopping"));
        }
        jobs_.clear();
        for (int i = 0; i < 20 && http_.waiting() + http_.connections() > 0; ++i) {
            http_.run();
            ::usleep(10'000);
        }
        heaps_.clear();
    }

    void housekeeping(int64_t now) {
        forget_dead_symbols();
        for (auto it = heaps_.begin(); it != heaps_.end();) {
            const bool gone = !perf::task_alive(it->first);
            if (gone) {
                it = heaps_.erase(it);
                continue;
            }
            if (it->second->attached() && it->second->idle(now)) it->second->detach();
            ++it;
        }
        if (workload_) workload_->reap();
        if (o_.all) return;
        // Named targets: serve ends with the last of them, once its profiles are answered.
        const bool any = std::any_of(access_.pids.begin(), access_.pids.end(),
                                     [](int pid) { return perf::task_alive(pid); });
        if (!any && jobs_.empty()) loop_.stop();
    }

    // The symbols of processes that are gone.
    void forget_dead_symbols() {
        for (auto it = symbolized_.begin(); it != symbolized_.end();) {
            if (perf::task_alive(*it)) {
                ++it;
                continue;
            }
            symbols_.forget(uint32_t(*it));
            it = symbolized_.erase(it);
        }
    }

    serve::HeapTarget& heap_target(int pid, std::string command_path = "") {
        auto& h = heaps_[pid];
        if (!h) h = std::make_unique<serve::HeapTarget>(pid, heap_settings_, std::move(command_path));
        return *h;
    }

    std::optional<http::Response> on_request(http::Server::RequestId id, const http::Request& r) {
        auto routed = http::route(r, access_);
        if (auto* refusal = std::get_if<http::Response>(&routed)) return std::move(*refusal);
        const http::Route& rt = std::get<http::Route>(routed);
        try {
            return answer(id, r, rt);
        } catch (const Error& e) {
            return http::Response::text(500, std::string("500 ") + e.what());
        }
    }

    std::optional<http::Response> answer(http::Server::RequestId id, const http::Request& r,
                                         const http::Route& rt) {
        using E = http::Endpoint;
        if (rt.endpoint == E::Index) {
            std::vector<int> pids = rt.pid   ? std::vector<int>{rt.pid}
                                    : o_.all ? serve::all_processes()
                                             : access_.pids;
            std::vector<serve::ProcessInfo> infos;
            for (int pid : pids) {
                serve::ProcessInfo p = serve::describe_process(pid, false);
                if (p.alive) infos.push_back(std::move(p));
            }
            return html(serve::index_page(infos, rt.prefix.substr(0, rt.prefix.find("/pid/"))));
        }
        if (!perf::task_alive(rt.pid)) {
            const bool named =
                std::find(access_.pids.begin(), access_.pids.end(), rt.pid) != access_.pids.end();
            return named ? http::Response::text(410, "410 process " + std::to_string(rt.pid) + " has exited")
                         : http::Response::text(404, "404 no process " + std::to_string(rt.pid));
        }
        switch (rt.endpoint) {
            case E::GoIndex:
                return html(serve::go_index_page(serve::describe_process(rt.pid, false), rt.prefix));
            case E::Profile:
            case E::GoProfile:
                return start_job(id, r, rt.pid, serve::ProfileKind::Cpu, rt.endpoint == E::Profile);
            case E::GoBlock:
                return start_job(id, r, rt.pid, serve::ProfileKind::Block, false);
            case E::GoMutex:
                return start_job(id, r, rt.pid, serve::ProfileKind::Mutex, false);
            case E::Heap:
                return http::Response::text(200, heap_target(rt.pid).heap_text());
            case E::Growth:
                return http::Response::text(200, heap_target(rt.pid).growth_text());
            case E::GoHeap:
            case E::GoAllocs: {
                if (r.arg("debug").value_or("0") != "0")
                    return http::Response::text(200, heap_target(rt.pid).heap_text());
                const bool allocs = rt.endpoint == E::GoAllocs;
                symbolized_.insert(rt.pid);  // the profile is symbolized here
                return octets(heap_target(rt.pid).heap_proto(allocs, symbols_), allocs ? "allocs" : "heap");
            }
            case E::Symbol:
                symbolized_.insert(rt.pid);
                if (r.method == "POST")
                    return http::Response::text(200, sym::symbol_page(symbols_, rt.pid, r.body));
                return http::Response::text(200,
                                            "num_symbols: 1\n" + sym::symbol_page(symbols_, rt.pid, r.query));
            case E::Cmdline:
            case E::GoCmdline: {
                // gperftools: one argument per line; Go: the arguments separated by NULs.
                const bool go = rt.endpoint == E::GoCmdline;
                const std::vector<std::string> args = serve::describe_process(rt.pid, false).cmdline;
                http::Response resp;
                for (size_t i = 0; i < args.size(); ++i) {
                    if (i && go) resp.body += '\0';
                    resp.body += args[i];
                    if (!go) resp.body += '\n';
                }
                return resp;
            }
            case E::Index:
                break;
        }
        return http::Response::text(404, "404 not found");
    }

    // A CPU, block or mutex profile of `pid` over ?seconds=N (30 by default, as Go's profile;
    // Go's block and mutex profiles count from the program's start, which no one outside it
    // can: here they cover the N seconds that follow, like a CPU profile).
    std::optional<http::Response> start_job(http::Server::RequestId id, const http::Request& r, int pid,
                                            serve::ProfileKind kind, bool legacy) {
        uint64_t seconds = 30;  // Go's default
        if (auto s = r.arg("seconds")) {
            char* end = nullptr;
            errno = 0;
            const unsigned long long v = std::strtoull(s->c_str(), &end, 10);
            if (s->empty() || *end || errno || (*s)[0] == '-' || v == 0 || v > o_.max_seconds)
                return http::Response::text(400, "400 seconds must be a whole number from 1 to " +
                                                     std::to_string(o_.max_seconds) + ", not '" + *s + "'");
            seconds = v;
        }
        const JobKey key{pid, kind};
        if (auto it = jobs_.find(key); it != jobs_.end()) {
            const int64_t left = (it->second.job->deadline_ns() - core::monotonic_now_ns()) / 1'000'000'000;
            return http::Response::text(409, std::string("409 a ") + kind_name(kind) +
                                                 " profile of process " + std::to_string(pid) +
                                                 " is already running (for " + it->second.peer + ", " +
                                                 std::to_string(std::max<int64_t>(left, 0)) + " s left)");
        }
        serve::ProfileRequest req;
        req.kind = kind;
        req.pid = pid;
        req.seconds = seconds;
        req.freq = o_.freq;
        req.dwarf_stack = opt_.dwarf_stack;
        req.format = legacy ? serve::CpuFormat::Gperftools : serve::CpuFormat::Proto;
        Job j{id, std::make_unique<serve::ProfileJob>(req), r.peer};
        loop_.add(j.job->fd(), [this, key](uint32_t) { pump_job(key); });
        jobs_.emplace(key, std::move(j));
        return std::nullopt;
    }

    static const char* kind_name(serve::ProfileKind k) {
        switch (k) {
            case serve::ProfileKind::Block:
                return "block";
            case serve::ProfileKind::Mutex:
                return "mutex";
            case serve::ProfileKind::Cpu:
                break;
        }
        return "CPU";
    }

    void pump_job(JobKey key) {
        auto it = jobs_.find(key);
        if (it == jobs_.end() || !it->second.job->pump()) return;
        Job j = std::move(it->second);
        jobs_.erase(it);
        loop_.remove(j.job->fd());
        serve::ProfileJob::Result res = j.job->result();
        const bool legacy = j.job->request().format == serve::CpuFormat::Gperftools;
        const serve::ProfileKind kind = j.job->request().kind;
        const char* file = legacy                              ? "profile.prof"
                           : kind == serve::ProfileKind::Block ? "block"
                           : kind == serve::ProfileKind::Mutex ? "mutex"
                                                               : "profile";
        http::Response resp =
            res.ok ? octets(std::move(res.body), file) : http::Response::text(500, "500 " + res.note);
        if (res.ok && !res.note.empty()) resp.headers.emplace_back("X-Perf-Prof-Note", res.note);
        http_.reply(j.request, std::move(resp));
    }

    void on_abort(http::Server::RequestId id) {
        // The client of a CPU profile went away: its child is killed, its events freed.
        for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
            if (it->second.request == id) {
                loop_.remove(it->second.job->fd());
                jobs_.erase(it);
                return;
            }
    }

    const Options& opt_;
    ServeOptions o_;
    http::Server http_;
    http::Access access_;
    serve::HeapSettings heap_settings_;
    std::unique_ptr<perf::Workload> workload_;
    std::map<int, std::unique_ptr<serve::HeapTarget>> heaps_;
    std::map<JobKey, Job> jobs_;  // one profile of each kind per target at a time
    sym::Symbolizer symbols_;     // /pprof/symbol and heap profiles
    std::set<int> symbolized_;    // processes in symbols_
    core::EventLoop loop_;
    int64_t next_house_ = 0;
};

int run_serve(const Options& opt) {
    Serve s(opt);
    return s.run();
}

}  // namespace

extern const ProfilerInfo serve_info;
const ProfilerInfo serve_info = {
    .name = "serve",
    .kind = ProfilerInfo::Kind::Command,
    .summary = "Serve pprof's remote profiling endpoints for processes of this host.",
    .usage = "[OPTION...] [-p PID,... | --all | -- COMMAND [ARG...]]",
    .body =
        {
            "SYNOPSIS",
            "    An HTTP server answering what gperftools' and Go's profiling handlers answer, for",
            "    processes that link neither: CPU profiles (perf_event_open), heap profiles (the",
            "    heap agent perf-prof-heap.so in the process, preloaded into the command launched or",
            "    injected on the first heap request, else uprobes on the allocator; sampled as",
            // One help line, longer than the source's: two literals joined on purpose.
            // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
            "    tcmalloc and Go sample), symbols and command lines. By default only the processes named "
            "with -p",
            "    or the command launched are served, on 127.0.0.1; --all serves every process",
            "    under a secret path prefix printed at start. One CPU profile per process at a time.",
            "",
            "    /pprof/profile?seconds=N     gperftools CPU profile (google-pprof)",
            "    /pprof/heap, /pprof/growth   heap profile text (heap_v2, growthz)",
            "    /pprof/symbol, /pprof/cmdline",
            "    /debug/pprof/profile?seconds=N, /debug/pprof/heap, /debug/pprof/allocs",
            "                                 gzip profile.proto (go tool pprof, Pyroscope, Parca)",
            "    /debug/pprof/block?seconds=N  Go's block profile: the waits off the CPU (sleeps, I/O,",
            "                                 locks) by stack, their count and delay, over N seconds",
            "    /debug/pprof/mutex?seconds=N  Go's mutex profile: contended futex waits (pthread and",
            "                                 C++ mutexes, ...) by the stack that released them",
            "    /pid/N/...                   the same for process N when several are served",
            "",
            "EXAMPLES",
            "    perf-prof serve -p 1234 --listen 127.0.0.1:6060",
            "    google-pprof --text http://127.0.0.1:6060/pprof/profile",
            "    go tool pprof -top http://127.0.0.1:6060/debug/pprof/heap",
            "    perf-prof serve --all --listen 127.0.0.1:6060",
        },
    .options =
        {{Opt::CallGraph,
          "stacks are always recorded; --call-graph dwarf unwinds\nuser stacks without frame pointers"}},
    .run_words = run_serve,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
