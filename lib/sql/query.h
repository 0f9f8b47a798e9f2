// The user's SQL (SPEC §P2 "Query output"): statements split as SQLite's prepare splits them,
// run, and printed as aligned tables whose column widths only grow.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace perfprof::sql {

// The statements of `sql` as SQLite splits them, each from its first non-blank character to
// its end including the ';'. Empty statements (";;", trailing blanks) are dropped. A statement
// that does not prepare ends the list; `error` then gets SQLite's message.
std::vector<std::string> split_statements(sqlite3* db, std::string_view sql, std::string* error);

// One statement's result: column names, and per row per column a type (SQLITE_INTEGER, ...)
// and the printed text of the cell.
struct Result {
    std::vector<std::string> names;
    std::vector<std::vector<int>> types;
    std::vector<std::vector<std::string>> cells;
    std::string error;  // an execution error ("" = none)
    uint64_t fullscan = 0, sort = 0, vm_step = 0;
};

// Runs one prepared-and-split statement. false: it does not prepare (`r.error` holds why).
bool run_statement(sqlite3* db, const std::string& stmt, Result& r);

// The printed text of a cell of this type (INTEGER %lld, FLOAT %.6f, TEXT, [BLOB:n], NULL).
std::string cell_text(int type, long long i, double d, const unsigned char* text, int bytes);

// Prints results; widths per statement and column survive across intervals.
class Printer {
public:
    // "=== stmt ===", the column line, the rule, the rows, a blank line.
    void print(size_t stmt_index, const std::string& stmt, const Result& r, FILE* out);

private:
    std::vector<std::vector<size_t>> widths_;
};

// The differences of two results of one statement (SPEC §P2 --verify), one line each.
std::vector<std::string> compare(const Result& main, const Result& verify);

}  // namespace perfprof::sql
