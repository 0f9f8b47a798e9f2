// The SQL functions of SPEC §P2: symbolic(), ksymbol(), syscall() and the BLOB formatters.
// All are registered on every database (SPEC's Recommendation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sql/print_format.h"

struct sqlite3;

namespace perfprof::sql {

struct SymbolicEntry {
    std::string table, event;  // 'table.field' or 'event.field' select it
    Symbolic sym;
};

struct Functions {
    std::vector<SymbolicEntry> symbolic;
    // Kernel symbol of an address, or null (printed "??").
    const char* (*ksymbol)(uint64_t addr, void* user) = nullptr;
    void* user = nullptr;
};

// Registers every function on `db`; `fns` must outlive it. Returns SQLITE_OK or an error code.
int register_functions(sqlite3* db, const Functions* fns);

// The formatters, for tests: the text of a BLOB, or "??" when the size does not fit.
std::string ipv4_text(const uint8_t* b, int n, bool host);
std::string ipv6_text(const uint8_t* b, int n);
std::string ipsa_text(const uint8_t* b, int n, bool host);
std::string uuid_text(const uint8_t* b, int n, bool guid);
std::string mac_text(const uint8_t* b, int n);

}  // namespace perfprof::sql
