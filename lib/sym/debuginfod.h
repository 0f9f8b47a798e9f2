// Debug files fetched from debuginfod servers (elfutils' libdebuginfod, the protocol of
// DEBUGINFOD_URLS) for objects that carry a build-id but no symbols of their own: the last
// source of an object's .symtab and .debug_frame, after the file, its MiniDebugInfo and the
// local debug files (SPEC §5.4.3).
//
// libdebuginfod is loaded with dlopen on the first request, so a run without DEBUGINFOD_URLS
// pays nothing (it drags libcurl and a TLS stack in) and the static release build needs no
// shared copy of it at link time. Its cache ($DEBUGINFOD_CACHE_PATH, else
// ~/.cache/debuginfod_client) keeps what was fetched for later runs.
//
// One state per run, shared by every thread (serve's jobs symbolize on several): a build-id is
// asked at most once, threads asking for one being fetched wait for that fetch, and each thread
// has its own client handle (libdebuginfod's are not meant to be shared).
#pragma once

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace perfprof::sym {

// DEBUGINFOD_TIMEOUT when the user set none (with DEBUGINFOD_RETRY_LIMIT 0 unless set):
// libdebuginfod's own defaults (90 s without data before it gives a server up, then two
// retries) would stall a profile's output for minutes.
inline constexpr const char* kDebuginfodTimeout = "10";

class Debuginfod {
public:
    // One request: a file descriptor (>= 0) of the debug file for a build-id (lowercase hex)
    // with its path in the cache, or -errno (-ENOENT: the servers do not have it).
    using Fetch = std::function<int(const std::string& build_id, std::string* path)>;
    struct Options {
        std::string urls;  // DEBUGINFOD_URLS; empty: never asks
        Fetch fetch;       // empty: libdebuginfod
        FILE* err = stderr;
    };
    explicit Debuginfod(Options o);
    Debuginfod(const Debuginfod&) = delete;
    Debuginfod& operator=(const Debuginfod&) = delete;

    // The run's, from the environment; its first use sets DEBUGINFOD_TIMEOUT when unset.
    static Debuginfod& process();
    // Tests: `d` stands for process() until replaced (nullptr: the environment's again).
    static void override_process(Debuginfod* d);

    bool enabled() const { return !opt_.urls.empty(); }
    // -v: a line on `log` per request (asked, got, not there). The highest level asked wins.
    void set_verbose(int verbose, FILE* log);

    // The path in the client's cache of the debug file of `build_id` (for `object`, named in
    // notes), fetched on the first ask; empty when disabled, not on the servers, or when a
    // request failed. A failure (server unreachable, time-out, ...) prints one line on stderr
    // for the whole run; after an unreachable server no other request is made in this run.
    std::string debug_file(const std::string& build_id, const std::string& object);
    // What an earlier debug_file() of `build_id` got; never asks.
    std::string known(const std::string& build_id) const;
    size_t requests() const;  // made so far

private:
    enum class State { Fetching, Done };
    struct Entry {
        State state = State::Fetching;
        std::string path;  // empty: none
    };

    int fetch(const std::string& build_id, std::string* path);
    void note(const std::string& object, int rc, const std::string& path, double ms);

    Options opt_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, Entry> entries_;
    size_t requests_ = 0;
    bool failed_ = false;       // the stderr line was printed
    bool unreachable_ = false;  // no more requests this run
    int verbose_ = 0;
    FILE* log_ = stdout;
};

// Whether an error (errno) of a request means that the servers cannot serve this run at all
// (refused, unresolvable, timed out, bad URL, no libdebuginfod: anything but a file they do not
// have or one over DEBUGINFOD_MAXSIZE), so that asking again for another object is pointless.
bool debuginfod_unreachable(int err);

}  // namespace perfprof::sym
