// The table of one event (SPEC §P2 "Event tables"): its columns from the tracefs format, the
// CREATE and INSERT statements, and the binding of one sample's values straight from the raw
// record (no copy, no allocation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf-prof/sample.h"
#include "sql/print_format.h"

struct sqlite3_stmt;
struct tep_event;

namespace perfprof::sql {

enum class ColType { Integer, Text, Blob, Null };
const char* type_name(ColType t);

struct Column {
    std::string name;
    ColType type = ColType::Integer;
    uint32_t offset = 0, size = 0;
    bool is_signed = false;
    bool dynamic = false;   // __data_loc / __rel_loc: a u32 locator at offset
    bool relative = false;  // __rel_loc: the data offset counts from the field's end
};

struct Layout {
    std::string table;                   // alias= or the event name
    std::string sys, name;               // the event
    std::vector<Column> columns;         // record columns: common_* (no common_type), then the fields
    std::vector<std::string> functions;  // applicable SQL calls, e.g. "ksymbol(function)"
};

// The columns of `ev` typed per SPEC §P2 with `info` (print_info of the same event).
Layout layout_of(const tep_event& ev, const PrintInfo& info, std::string table);
// Typing alone, for tests: the type of one field given its tracefs type text, flags and the
// conversion it prints with ("" = not printed).
ColType column_type(const std::string& type, unsigned long flags, int size, const std::string& conv);

std::string create_sql(const Layout& l);       // CREATE TABLE "t" (_pid INTEGER, ...)
std::string insert_sql(const Layout& l);       // INSERT INTO "t" VALUES (?,...)
std::string quoted(const std::string& ident);  // "ident" with inner quotes doubled

// Binds the 5 sample columns then every record column of `l` to `stmt` (parameters 1..N).
// Values point into s.raw (SQLITE_STATIC): step the statement before the sample goes away.
void bind_row(sqlite3_stmt* stmt, const Layout& l, const Sample& s);

}  // namespace perfprof::sql
