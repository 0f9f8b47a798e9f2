// GNU libmicrohttpd, loaded when `serve` starts its server rather than by the dynamic loader
// at every start: linked, it brings GnuTLS and ten more libraries into every run of every
// profiler (≈0.3 ms of loading before main, during which a stop signal still kills us).
#pragma once

#include <microhttpd.h>

namespace perfprof::http {

// The functions the server calls, resolved from libmicrohttpd.so.12.
struct MhdLib {
    decltype(&::MHD_start_daemon) start_daemon;
    decltype(&::MHD_stop_daemon) stop_daemon;
    decltype(&::MHD_run) run;
    decltype(&::MHD_run_from_select) run_from_select;
    decltype(&::MHD_get_fdset2) get_fdset2;
    decltype(&::MHD_get_timeout) get_timeout;
    decltype(&::MHD_get_daemon_info) get_daemon_info;
    decltype(&::MHD_get_connection_info) get_connection_info;
    decltype(&::MHD_get_connection_values_n) get_connection_values_n;
    decltype(&::MHD_lookup_connection_value) lookup_connection_value;
    decltype(&::MHD_suspend_connection) suspend_connection;
    decltype(&::MHD_resume_connection) resume_connection;
    decltype(&::MHD_create_response_from_buffer_with_free_callback_cls) create_response;
    decltype(&::MHD_add_response_header) add_response_header;
    decltype(&::MHD_queue_response) queue_response;
    decltype(&::MHD_destroy_response) destroy_response;
    decltype(&::MHD_set_panic_func) set_panic_func;
};

// Loaded on the first call (never unloaded); throws Error naming the library and its Debian
// package when it is missing or lacks a function.
const MhdLib& mhd();

}  // namespace perfprof::http
