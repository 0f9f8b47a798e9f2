#include "sym/debuginfod.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace perfprof::sym {

namespace {

// libdebuginfod's entry points, resolved once.
struct Lib {
    decltype(&debuginfod_begin) begin = nullptr;
    decltype(&debuginfod_end) end = nullptr;
    decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
};

const Lib* lib() {
    static const Lib* loaded = []() -> const Lib* {
        void* h = ::dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) return nullptr;
        static Lib l;
        l.begin = reinterpret_cast<decltype(l.begin)>(::dlsym(h, "debuginfod_begin"));
        l.end = reinterpret_cast<decltype(l.end)>(::dlsym(h, "debuginfod_end"));
        l.find_debuginfo =
            reinterpret_cast<decltype(l.find_debuginfo)>(::dlsym(h, "debuginfod_find_debuginfo"));
        if (!l.begin || !l.end || !l.find_debuginfo) return nullptr;
        return &l;
    }();
    return loaded;
}

// Each thread's client: a handle carries one transfer's state and is not to be shared.
struct Client {
    debuginfod_client* c = nullptr;
    ~Client() {
        if (c) lib()->end(c);
    }
};

int libdebuginfod_fetch(const std::string& build_id, std::string* path) {
    const Lib* l = lib();
    if (!l) return -ELIBACC;
    thread_local Client client;
    if (!client.c && !(client.c = l->begin())) return -ENOMEM;
    char* p = nullptr;
    // build_id_len 0: the id is given as a hex string.
    int fd = l->find_debuginfo(client.c, reinterpret_cast<const unsigned char*>(build_id.c_str()), 0, &p);
    if (fd >= 0 && p) *path = p;
    std::free(p);
    return fd;
}

}  // namespace

bool debuginfod_unreachable(int err) {
    return err != ENOENT && err != EFBIG;
}

Debuginfod::Debuginfod(Options o) : opt_(std::move(o)) {
    if (!opt_.fetch) opt_.fetch = libdebuginfod_fetch;
}

namespace {
std::atomic<Debuginfod*> g_override{nullptr};
}  // namespace

void Debuginfod::override_process(Debuginfod* d) {
    g_override.store(d);
}

Debuginfod& Debuginfod::process() {
    if (Debuginfod* d = g_override.load()) return *d;
    static Debuginfod d{[] {
        Options o;
        if (const char* urls = std::getenv(DEBUGINFOD_URLS_ENV_VAR)) o.urls = urls;
        // Set before any thread of ours could read the environment: the first symbolizer is
        // made on the main thread.
        if (!o.urls.empty() && !std::getenv(DEBUGINFOD_TIMEOUT_ENV_VAR)) {
            ::setenv(DEBUGINFOD_TIMEOUT_ENV_VAR, kDebuginfodTimeout, 0);
            // Each retry would wait the time-out again (libdebuginfod retries twice).
            if (!std::getenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR))
                ::setenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR, "0", 0);
        }
        return o;
    }()};
    return d;
}

void Debuginfod::set_verbose(int verbose, FILE* log) {
    std::lock_guard lk(mu_);
    if (verbose <= verbose_) return;
    verbose_ = verbose;
    log_ = log;
}

std::string Debuginfod::debug_file(const std::string& build_id, const std::string& object) {
    if (!enabled() || build_id.empty()) return {};
    std::unique_lock lk(mu_);
    // Not a structured binding: the wait's lambda captures the iterator (clang 14 refuses).
    const auto ins = entries_.try_emplace(build_id);
    const auto it = ins.first;
    if (!ins.second) {
        cv_.wait(lk, [&] { return it->second.state == State::Done; });
        return it->second.path;
    }
    if (unreachable_) {
        it->second.state = State::Done;
        return {};
    }
    ++requests_;
    if (verbose_ > 0)
        std::fprintf(log_, "debuginfod: debug info of %s (build-id %s): from the cache or %s\n",
                     object.c_str(), build_id.c_str(), opt_.urls.c_str());
    lk.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    std::string path;
    int rc = fetch(build_id, &path);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    lk.lock();
    note(object, rc, path, ms);
    it->second.path = rc >= 0 ? path : std::string();
    it->second.state = State::Done;
    cv_.notify_all();
    return it->second.path;
}

int Debuginfod::fetch(const std::string& build_id, std::string* path) {
    int rc = opt_.fetch(build_id, path);
    if (rc >= 0) {
        ::close(rc);
        if (path->empty()) rc = -ENOENT;
    }
    return rc;
}

// Under mu_.
void Debuginfod::note(const std::string& object, int rc, const std::string& path, double ms) {
    if (rc >= 0) {
        if (verbose_ > 0)
            std::fprintf(log_, "debuginfod: %s: %s (%.0f ms)\n", object.c_str(), path.c_str(), ms);
        return;
    }
    const int err = -rc;
    if (!debuginfod_unreachable(err)) {
        if (verbose_ > 0)
            std::fprintf(log_, "debuginfod: %s: %s\n", object.c_str(),
                         err == ENOENT ? "not on the servers" : "larger than DEBUGINFOD_MAXSIZE");
        return;
    }
    unreachable_ = true;
    if (failed_) return;
    failed_ = true;
    if (err == ELIBACC) {
        std::fprintf(opt_.err, "perf-prof: debuginfod: cannot load %s (install libdebuginfod1)\n",
                     DEBUGINFOD_SONAME);
    } else if (err == ETIME) {
        const char* t = std::getenv(DEBUGINFOD_TIMEOUT_ENV_VAR);
        std::fprintf(opt_.err, "perf-prof: debuginfod: %s: no answer within DEBUGINFOD_TIMEOUT=%s s\n",
                     opt_.urls.c_str(), t ? t : "90");
    } else {
        std::fprintf(opt_.err, "perf-prof: debuginfod: %s: %s\n", opt_.urls.c_str(), std::strerror(err));
    }
    std::fflush(opt_.err);
}

std::string Debuginfod::known(const std::string& build_id) const {
    std::lock_guard lk(mu_);
    auto it = entries_.find(build_id);
    return it != entries_.end() && it->second.state == State::Done ? it->second.path : std::string();
}

size_t Debuginfod::requests() const {
    std::lock_guard lk(mu_);
    return requests_;
}

}  // namespace perfprof::sym
