#include "sql/functions.h"

#include <arpa/inet.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstring>

#include "filter/syscall_names.h"

namespace perfprof::sql {

std::string ipv4_text(const uint8_t* b, int n, bool host) {
    if (n != 4) return "??";
    uint8_t a[4];
    std::memcpy(a, b, 4);
    if (host) std::swap(a[0], a[3]), std::swap(a[1], a[2]);
    char buf[20];
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    return buf;
}

std::string ipv6_text(const uint8_t* b, int n) {
    if (n != 16) return "??";
    char buf[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, b, buf, sizeof buf) ? buf : "??";
}

std::string ipsa_text(const uint8_t* b, int n, bool host) {
    // struct sockaddr_in (16 bytes) or sockaddr_in6 (28 bytes); the family in host order.
    if (n < 4) return "??";
    uint16_t family, port;
    std::memcpy(&family, b, 2);
    std::memcpy(&port, b + 2, 2);
    port = host ? port : ntohs(port);
    if (family == AF_INET && n >= 8) return ipv4_text(b + 4, 4, host) + ":" + std::to_string(port);
    if (family == AF_INET6 && n >= 24) return "[" + ipv6_text(b + 8, 16) + "]:" + std::to_string(port);
    return "??";
}

std::string uuid_text(const uint8_t* b, int n, bool guid) {
    if (n != 16) return "??";
    uint8_t u[16];
    std::memcpy(u, b, 16);
    if (guid) {
        std::swap(u[0], u[3]), std::swap(u[1], u[2]);
        std::swap(u[4], u[5]);
        std::swap(u[6], u[7]);
    }
    char buf[40];
    std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    return buf;
}

std::string mac_text(const uint8_t* b, int n) {
    if (n != 6) return "??";
    char buf[20];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
    return buf;
}

namespace {

const Functions& fns_of(sqlite3_context* c) {
    return *static_cast<const Functions*>(sqlite3_user_data(c));
}

void result_text(sqlite3_context* c, const std::string& s) {
    sqlite3_result_text(c, s.data(), int(s.size()), SQLITE_TRANSIENT);
}

void lookup(sqlite3_context* c, const SymbolicEntry* e, int64_t v) {
    if (!e) {
        sqlite3_result_text(c, "UNKNOWN", -1, SQLITE_STATIC);
        return;
    }
    auto it = e->sym.names.find(int64_t(uint64_t(v) & e->sym.mask));
    if (it == e->sym.names.end()) {
        sqlite3_result_text(c, "UNKNOWN", -1, SQLITE_STATIC);
        return;
    }
    sqlite3_result_text(c, it->second.c_str(), int(it->second.size()), SQLITE_STATIC);
}

void symbolic(sqlite3_context* c, int argc, sqlite3_value** argv) {
    const Functions& f = fns_of(c);
    if (argc == 1) {
        if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
            sqlite3_result_error(c, "symbolic() argument must be INTEGER", -1);
            return;
        }
        if (f.symbolic.size() != 1) {
            sqlite3_result_error(
                c, "symbolic(value) needs exactly one __print_symbolic field; use symbolic('field', value)",
                -1);
            return;
        }
        lookup(c, &f.symbolic[0], sqlite3_value_int64(argv[0]));
        return;
    }
    if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
        sqlite3_result_error(c, "symbolic() first argument must be TEXT", -1);
        return;
    }
    if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER) {
        sqlite3_result_error(c, "symbolic() second argument must be INTEGER", -1);
        return;
    }
    const std::string_view name(reinterpret_cast<const char*>(sqlite3_value_text(argv[0])));
    const size_t dot = name.find('.');
    const std::string_view owner = dot == std::string_view::npos ? "" : name.substr(0, dot);
    const std::string_view field = dot == std::string_view::npos ? name : name.substr(dot + 1);
    const SymbolicEntry* hit = nullptr;
    for (const SymbolicEntry& e : f.symbolic)
        if (e.sym.field == field && (owner.empty() || owner == e.table || owner == e.event)) {
            hit = &e;
            break;
        }
    lookup(c, hit, sqlite3_value_int64(argv[1]));
}

void ksymbol(sqlite3_context* c, int, sqlite3_value** argv) {
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
        sqlite3_result_error(c, "ksymbol() argument must be INTEGER", -1);
        return;
    }
    const Functions& f = fns_of(c);
    const char* s = f.ksymbol ? f.ksymbol(uint64_t(sqlite3_value_int64(argv[0])), f.user) : nullptr;
    sqlite3_result_text(c, s ? s : "??", -1, SQLITE_TRANSIENT);
}

void syscall(sqlite3_context* c, int, sqlite3_value** argv) {
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
        sqlite3_result_error(c, "syscall() argument must be INTEGER", -1);
        return;
    }
    const char* s = filter::syscall_name(sqlite3_value_int64(argv[0]));
    sqlite3_result_text(c, s ? s : "??", -1, SQLITE_TRANSIENT);
}

// The BLOB formatters share one shape: argument check, then the formatter.
template <std::string (*Fmt)(const uint8_t*, int, bool), bool Host>
void blob_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
        const std::string msg =
            std::string(static_cast<const char*>(sqlite3_user_data(c))) + "() argument must be BLOB";
        sqlite3_result_error(c, msg.c_str(), -1);
        return;
    }
    result_text(
        c, Fmt(static_cast<const uint8_t*>(sqlite3_value_blob(argv[0])), sqlite3_value_bytes(argv[0]), Host));
}

std::string ipv6_any(const uint8_t* b, int n, bool) {
    return ipv6_text(b, n);
}
std::string mac_any(const uint8_t* b, int n, bool) {
    return mac_text(b, n);
}

}  // namespace

int register_functions(sqlite3* db, const Functions* fns) {
    void* user = const_cast<Functions*>(fns);
    const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
    int rc = sqlite3_create_function(db, "symbolic", 2, flags, user, symbolic, nullptr, nullptr);
    rc = rc ? rc : sqlite3_create_function(db, "symbolic", 1, flags, user, symbolic, nullptr, nullptr);
    rc = rc ? rc : sqlite3_create_function(db, "ksymbol", 1, flags, user, ksymbol, nullptr, nullptr);
    rc = rc ? rc : sqlite3_create_function(db, "syscall", 1, flags, user, syscall, nullptr, nullptr);
    struct Blob {
        const char* name;
        void (*fn)(sqlite3_context*, int, sqlite3_value**);
    };
    static const Blob blobs[] = {
        {"ipv4_str", blob_fn<ipv4_text, false>}, {"ipv4_hstr", blob_fn<ipv4_text, true>},
        {"ipv6_str", blob_fn<ipv6_any, false>},  {"ipsa_str", blob_fn<ipsa_text, false>},
        {"ipsa_hstr", blob_fn<ipsa_text, true>}, {"uuid_str", blob_fn<uuid_text, false>},
        {"guid_str", blob_fn<uuid_text, true>},  {"mac_str", blob_fn<mac_any, false>},
    };
    // The BLOB functions' user data is their own name (for the error text).
    for (const Blob& b : blobs)
        if (!rc)
            rc = sqlite3_create_function(db, b.name, 1, flags, const_cast<char*>(b.name), b.fn, nullptr,
                                         nullptr);
    return rc;
}

}  // namespace perfprof::sql
