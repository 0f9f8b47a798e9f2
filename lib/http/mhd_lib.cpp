#include "http/mhd_lib.h"

#include <dlfcn.h>

#include <string>

#include "perf-prof/error.h"

namespace perfprof::http {

namespace {

constexpr const char* kSoname = "libmicrohttpd.so.12";

template <class F>
void resolve(void* handle, F& fn, const char* name) {
    void* p = ::dlsym(handle, name);
    if (!p)
        throw Error(std::string("serve: ") + kSoname + " has no " + name,
                    "install libmicrohttpd12 (0.9.71 or later)");
    fn = reinterpret_cast<F>(p);
}

MhdLib load() {
    void* h = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* why = ::dlerror();
        throw Error(std::string("serve: cannot load ") + kSoname + (why ? std::string(": ") + why : ""),
                    "install the Debian package libmicrohttpd12");
    }
    MhdLib m{};
    resolve(h, m.start_daemon, "MHD_start_daemon");
    resolve(h, m.stop_daemon, "MHD_stop_daemon");
    resolve(h, m.run, "MHD_run");
    resolve(h, m.run_from_select, "MHD_run_from_select");
    resolve(h, m.get_fdset2, "MHD_get_fdset2");
    resolve(h, m.get_timeout, "MHD_get_timeout");
    resolve(h, m.get_daemon_info, "MHD_get_daemon_info");
    resolve(h, m.get_connection_info, "MHD_get_connection_info");
    resolve(h, m.get_connection_values_n, "MHD_get_connection_values_n");
    resolve(h, m.lookup_connection_value, "MHD_lookup_connection_value");
    resolve(h, m.suspend_connection, "MHD_suspend_connection");
    resolve(h, m.resume_connection, "MHD_resume_connection");
    resolve(h, m.create_response, "MHD_create_response_from_buffer_with_free_callback_cls");
    resolve(h, m.add_response_header, "MHD_add_response_header");
    resolve(h, m.queue_response, "MHD_queue_response");
    resolve(h, m.destroy_response, "MHD_destroy_response");
    resolve(h, m.set_panic_func, "MHD_set_panic_func");
    return m;
}

}  // namespace

const MhdLib& mhd() {
    static const MhdLib lib = load();
    return lib;
}

}  // namespace perfprof::http
