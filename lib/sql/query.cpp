#include "sql/query.h"

#include <sqlite3.h>

#include <cctype>

namespace perfprof::sql {

std::vector<std::string> split_statements(sqlite3* db, std::string_view sql, std::string* error) {
    std::vector<std::string> out;
    const std::string text(sql);
    const char* p = text.c_str();
    const char* end = p + text.size();
    while (p < end) {
        while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
        if (p >= end) break;
        sqlite3_stmt* stmt = nullptr;
        const char* tail = nullptr;
        if (sqlite3_prepare_v2(db, p, int(end - p), &stmt, &tail) != SQLITE_OK) {
            if (error) *error = sqlite3_errmsg(db);
            sqlite3_finalize(stmt);
            break;
        }
        sqlite3_finalize(stmt);
        if (!tail || tail <= p) break;
        // null: only a ';' or a comment. SQLite skips empty statements before the one it
        // prepared: their ';' and blanks are not part of its text.
        const char* start = p;
        while (start < tail && (*start == ';' || std::isspace(static_cast<unsigned char>(*start)))) ++start;
        if (stmt) out.emplace_back(start, size_t(tail - start));
        p = tail;
    }
    return out;
}

std::string cell_text(int type, long long i, double d, const unsigned char* text, int bytes) {
    char buf[64];
    switch (type) {
        case SQLITE_INTEGER:
            std::snprintf(buf, sizeof buf, "%lld", i);
            return buf;
        case SQLITE_FLOAT:
            std::snprintf(buf, sizeof buf, "%.6f", d);
            return buf;
        case SQLITE_TEXT:
            return text ? std::string(reinterpret_cast<const char*>(text), size_t(bytes)) : std::string();
        case SQLITE_BLOB:
            return "[BLOB:" + std::to_string(bytes) + "]";
        default:
            return "NULL";
    }
}

bool run_statement(sqlite3* db, const std::string& text, Result& r) {
    r = Result{};
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, text.c_str(), int(text.size()), &stmt, nullptr) != SQLITE_OK || !stmt) {
        r.error = sqlite3_errmsg(db);
        sqlite3_finalize(stmt);
        return false;
    }
    const int n = sqlite3_column_count(stmt);
    for (int c = 0; c < n; ++c) r.names.emplace_back(sqlite3_column_name(stmt, c));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        std::vector<int>& types = r.types.emplace_back();
        std::vector<std::string>& cells = r.cells.emplace_back();
        for (int c = 0; c < n; ++c) {
            const int t = sqlite3_column_type(stmt, c);
            types.push_back(t);
            const unsigned char* txt = t == SQLITE_TEXT ? sqlite3_column_text(stmt, c) : nullptr;
            cells.push_back(cell_text(t, sqlite3_column_int64(stmt, c), sqlite3_column_double(stmt, c), txt,
                                      sqlite3_column_bytes(stmt, c)));
        }
    }
    if (rc != SQLITE_DONE) r.error = sqlite3_errmsg(db);
    r.fullscan = uint64_t(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0));
    r.sort = uint64_t(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_SORT, 0));
    r.vm_step = uint64_t(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_VM_STEP, 0));
    sqlite3_finalize(stmt);
    return true;
}

namespace {

void padded(std::string& line, const std::string& s, size_t w) {
    line += s;
    if (s.size() < w) line.append(w - s.size(), ' ');
}

}  // namespace

void Printer::print(size_t stmt_index, const std::string& stmt, const Result& r, FILE* out) {
    if (widths_.size() <= stmt_index) widths_.resize(stmt_index + 1);
    std::vector<size_t>& w = widths_[stmt_index];
    if (w.size() != r.names.size()) {
        w.clear();
        for (const std::string& n : r.names) w.push_back(n.size());
    }
    std::string line = "=== " + stmt + " ===\n";
    if (!r.names.empty()) {
        for (size_t c = 0; c < w.size(); ++c) {
            if (c) line += " | ";
            padded(line, r.names[c], w[c]);
        }
        line += '\n';
        for (size_t c = 0; c < w.size(); ++c) {
            if (c) line += "-+-";
            line.append(w[c], '-');
        }
        line += '\n';
    }
    for (const std::vector<std::string>& row : r.cells) {
        for (size_t c = 0; c < row.size() && c < w.size(); ++c) {
            if (row[c].size() > w[c]) w[c] = row[c].size();
            if (c) line += " | ";
            padded(line, row[c], w[c]);
        }
        line += '\n';
    }
    std::fwrite(line.data(), 1, line.size(), out);
}

std::vector<std::string> compare(const Result& a, const Result& b) {
    std::vector<std::string> diffs;
    if (a.error != b.error)
        diffs.push_back("Execution error mismatch: main='" + a.error + "', verify='" + b.error + "'");
    if (a.names.size() != b.names.size()) {
        diffs.push_back("Column count mismatch: main=" + std::to_string(a.names.size()) +
                        ", verify=" + std::to_string(b.names.size()));
        return diffs;
    }
    for (size_t c = 0; c < a.names.size(); ++c)
        if (a.names[c] != b.names[c])
            diffs.push_back("Column " + std::to_string(c) + " name mismatch: main=" + a.names[c] +
                            ", verify=" + b.names[c]);
    if (a.cells.size() != b.cells.size())
        diffs.push_back("Row count mismatch: main=" + std::to_string(a.cells.size()) +
                        ", verify=" + std::to_string(b.cells.size()));
    static const char* const kType[] = {"", "INTEGER", "FLOAT", "TEXT", "BLOB", "NULL"};
    for (size_t row = 0; row < a.cells.size() && row < b.cells.size(); ++row)
        for (size_t c = 0; c < a.cells[row].size() && c < b.cells[row].size(); ++c) {
            const int ta = a.types[row][c], tb = b.types[row][c];
            if (ta != tb)
                diffs.push_back("Row " + std::to_string(row) + " column " + std::to_string(c) +
                                " type mismatch: main=" + kType[ta] + ", verify=" + kType[tb]);
            else if (a.cells[row][c] != b.cells[row][c])
                diffs.push_back("Column " + std::to_string(c) + " " + kType[ta] +
                                " mismatch: main=" + a.cells[row][c] + ", verify=" + b.cells[row][c]);
        }
    return diffs;
}

}  // namespace perfprof::sql
