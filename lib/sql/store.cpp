#include "sql/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <map>
#include <thread>

#include "perf-prof/error.h"
#include "sql/planner.h"

extern "C" {
#include <event-parse.h>
}

namespace perfprof::sql {

namespace {

// --verify's file database: SPEC's name in the current directory, unlinked at once. The name is
// created exclusively, so runs side by side in one directory take turns for it (each holds it
// for microseconds) instead of opening one file and locking each other out.
constexpr const char* kVerifyDb = "verify_temp.db";

std::unique_ptr<Db> open_verify_db() {
    for (int tries = 0;; ++tries) {
        const int fd = ::open(kVerifyDb, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::close(fd);
            std::unique_ptr<Db> db;
            try {
                db = std::make_unique<Db>(kVerifyDb);
            } catch (...) {
                ::unlink(kVerifyDb);
                throw;
            }
            ::unlink(kVerifyDb);
            return db;
        }
        if (errno != EEXIST || tries == 2000)  // a second: a file of someone else's
            throw Error::sys(errno, std::string("cannot create the verification database ") + kVerifyDb);
        ::usleep(500);
    }
}

}  // namespace

Db::Db(const std::string& path) {
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | (path.empty() ? SQLITE_OPEN_MEMORY : 0);
    const std::string name = path.empty() ? ":memory:" : path;
    if (sqlite3_open_v2(name.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
        const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error("cannot open database " + name + ": " + msg);
    }
    // One writer, no crash recovery wanted: no journal, no fsync, the file locked for us.
    try {
        exec(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
            " PRAGMA temp_store=MEMORY");
    } catch (...) {
        sqlite3_close(db_);
        throw;
    }
}

Db::~Db() {
    sqlite3_close_v2(db_);
}

void Db::exec(const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
        std::string text = msg ? msg : sqlite3_errmsg(db_);
        sqlite3_free(msg);
        throw Error(sql + ": " + text);
    }
}

Store::Store(StoreConfig cfg, std::vector<EventDef> events) : cfg_(std::move(cfg)) {
    if (cfg_.verify && !cfg_.path.empty()) {
        std::fputs("--verify disabled: cannot verify when SQL output is saved to file\n", cfg_.out);
        cfg_.verify = false;
    }
    for (EventDef& e : events) {
        for (const Table& t : tables_)
            if (lower(t.def.table) == lower(e.table))
                throw Error("duplicate table name " + e.table + ", use alias=");
        Table t;
        const PrintInfo info = print_info(*e.tp, cfg_.isa);
        t.layout = layout_of(*e.tp, info, e.table);
        for (const Symbolic& s : info.symbolic) fns_.symbolic.push_back({e.table, t.layout.name, s});
        t.def = std::move(e);
        tables_.push_back(std::move(t));
    }
    // symbolic(value) applies when the whole list has exactly one mapping.
    for (Table& t : tables_)
        if (fns_.symbolic.size() == 1 && t.layout.table == fns_.symbolic[0].table)
            t.layout.functions.insert(t.layout.functions.begin() + 1,
                                      "symbolic(" + fns_.symbolic[0].sym.field + ")");
    fns_.ksymbol = cfg_.ksymbol;
    fns_.user = cfg_.user;
    db_ = std::make_unique<Db>(cfg_.path);
    if (register_functions(db_->get(), &fns_) != SQLITE_OK) throw Error("cannot register the SQL functions");
    if (cfg_.verify) {
        std::fputs("Creating verification database: verify_temp.db\n", cfg_.out);
        verify_ = open_verify_db();
        register_functions(verify_->get(), &fns_);
    }
    create_tables(*db_, true);
    if (verify_) create_tables(*verify_, false);
    // Memory mode queries a full database in a thread while the samples go to its twin.
    if (cfg_.path.empty() && !cfg_.query.empty() && !verify_) {
        spare_ = std::make_unique<Db>("");
        register_functions(spare_->get(), &fns_);
        create_tables(*spare_, false);
    }
    prepare_inserts();
    db_->exec("BEGIN");
    if (verify_) verify_->exec("BEGIN");
}

Store::~Store() {
    if (worker_.joinable()) worker_.join();
    finalize_inserts();
}

void Store::create_tables(Db& db, bool announce) {
    db.exec(
        "CREATE TABLE IF NOT EXISTS event_metadata (table_name TEXT PRIMARY KEY, event_system TEXT, "
        "event_name TEXT,"
        " event_id INTEGER, filter_expression TEXT, has_stack BOOLEAN, max_stack INTEGER, field_count "
        "INTEGER,"
        " created_time INTEGER, sample_count INTEGER, first_sample_time INTEGER, last_sample_time INTEGER,"
        " function_list TEXT)");
    for (Table& t : tables_) {
        db.exec("DROP TABLE IF EXISTS " + quoted(t.layout.table));
        const std::string create = create_sql(t.layout);
        if (announce && cfg_.verbose) std::fprintf(cfg_.out, "CREATE SQL: %s\n", create.c_str());
        db.exec(create);
        t.created = int64_t(std::time(nullptr));
    }
    if (announce) choose_indexes(db);
    // A file keeps its index for later readers; memory mode builds it for the queries only.
    if (!cfg_.path.empty()) index_tables(db, true);
}

// The statements split once every table exists; each table's index chosen and announced.
void Store::choose_indexes(Db& db) {
    if (!cfg_.query.empty()) statements_ = split_statements(db.get(), cfg_.query, nullptr);
    for (Table& t : tables_) {
        std::string warning;
        t.index = cfg_.path.empty() || !t.def.index.empty()
                      ? index_column(t.layout, t.def.index, statements_, &warning)
                      : std::string();
        if (!warning.empty())
            std::fprintf(cfg_.err, "%s:%s: Warning: %s\n", t.layout.sys.c_str(), t.layout.name.c_str(),
                         warning.c_str());
        if (t.index.empty()) continue;
        t.build_index =
            !cfg_.path.empty() || !t.def.index.empty() || constrained(t.layout, t.index, statements_);
        bool used = false;
        for (const std::string& st : statements_) used |= st.find(t.index) != std::string::npos;
        std::fprintf(cfg_.out, "%s:%s: Chosen '%s' field for indexing%s\n", t.layout.sys.c_str(),
                     t.layout.name.c_str(), t.index.c_str(), used ? "" : " (not used)");
    }
}

// In memory mode the index is built over the interval's rows just before the queries (one
// sort) and dropped before the rows are: maintaining it on every insert costs more. It is
// built only where it can spare a scan: index= given, or a WHERE naming the column (for a
// GROUP BY alone, building it costs what the sort it replaces does: 150 ms over 300k rows).
void Store::index_tables(Db& db, bool create) {
    for (const Table& t : tables_) {
        if (t.index.empty() || !t.build_index) continue;
        const std::string name = quoted(t.layout.table + "_" + t.index + "_idx");
        if (create)
            db.exec("CREATE INDEX IF NOT EXISTS " + name + " ON " + quoted(t.layout.table) + " (" +
                    quoted(t.index) + ")");
        else
            db.exec("DROP INDEX IF EXISTS " + name);
    }
}

void Store::prepare_inserts() {
    for (Table& t : tables_) {
        const std::string ins = insert_sql(t.layout);
        if (sqlite3_prepare_v3(db_->get(), ins.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &t.insert, nullptr) !=
            SQLITE_OK)
            throw Error("cannot prepare " + ins + ": " + sqlite3_errmsg(db_->get()));
        if (verify_ && sqlite3_prepare_v3(verify_->get(), ins.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                                          &t.verify_insert, nullptr))
            throw Error("cannot prepare " + ins + ": " + sqlite3_errmsg(verify_->get()));
        if (spare_ && sqlite3_prepare_v3(spare_->get(), ins.c_str(), -1, SQLITE_PREPARE_PERSISTENT,
                                         &t.spare_insert, nullptr))
            throw Error("cannot prepare " + ins + ": " + sqlite3_errmsg(spare_->get()));
    }
}

void Store::finalize_inserts() {
    for (Table& t : tables_) {
        sqlite3_finalize(t.insert);
        sqlite3_finalize(t.verify_insert);
        sqlite3_finalize(t.spare_insert);
        t.insert = t.verify_insert = t.spare_insert = nullptr;
    }
}

std::string Store::pushdown(int event) {
    Table& t = tables_.at(size_t(event));
    if (!cfg_.path.empty() || !t.def.filter.empty() || statements_.empty()) return "";
    t.def.filter = pushdown_filter(t.layout, statements_);
    return t.def.filter;
}

void Store::insert(int event, const Sample& s) noexcept {
    if (event < 0 || size_t(event) >= tables_.size()) return;
    Table& t = tables_[size_t(event)];
    for (sqlite3_stmt* stmt : {t.insert, t.verify_insert}) {
        if (!stmt) continue;
        bind_row(stmt, t.layout, s);
        sqlite3_step(stmt);
        sqlite3_reset(stmt);
    }
    if (!t.count++) t.first = s.time;
    t.last = s.time;
    ++inserts_;
    // A file commits every 2000 rows: a bounded journal-less transaction.
    if (!cfg_.path.empty() && ++pending_ >= 2000) {
        pending_ = 0;
        sqlite3_exec(db_->get(), "COMMIT; BEGIN", nullptr, nullptr, nullptr);
        ++commits_;
    }
}

void Store::update_metadata() {
    for (Db* db : {db_.get(), verify_.get()}) {
        if (!db) continue;
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db->get(),
                           "INSERT OR REPLACE INTO event_metadata VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                           &st, nullptr);
        for (const Table& t : tables_) {
            std::string fl;
            for (const std::string& f : t.layout.functions) fl += (fl.empty() ? "" : ", ") + f;
            sqlite3_bind_text(st, 1, t.layout.table.c_str(), -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, t.layout.sys.c_str(), -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, t.layout.name.c_str(), -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, t.def.tp->id);
            sqlite3_bind_text(st, 5, t.def.filter.c_str(), -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 6, t.def.stack);
            sqlite3_bind_int(st, 7, t.def.max_stack);
            sqlite3_bind_int64(st, 8, int64_t(8 + t.def.tp->format.nr_fields));
            sqlite3_bind_int64(st, 9, t.created);
            sqlite3_bind_int64(st, 10, int64_t(t.count));
            sqlite3_bind_int64(st, 11, int64_t(t.first));
            sqlite3_bind_int64(st, 12, int64_t(t.last));
            sqlite3_bind_text(st, 13, fl.c_str(), -1, SQLITE_TRANSIENT);
            sqlite3_step(st);
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
}

void Store::run_queries(Db& db, const std::string& wall_header) {
    const auto t0 = std::chrono::steady_clock::now();
    std::fputs(wall_header.c_str(), cfg_.out);
    std::string error;
    const std::vector<std::string> stmts = split_statements(db.get(), cfg_.query, &error);
    Result r, v;
    uint64_t fullscan = 0, sort = 0, vm = 0;
    for (size_t i = 0; i < stmts.size(); ++i) {
        if (!run_statement(db.get(), stmts[i], r)) {
            error = r.error;
            break;
        }
        printer_.print(i, stmts[i], r, cfg_.out);
        if (verify_) {
            run_statement(verify_->get(), stmts[i], v);
            for (const std::string& d : compare(r, v)) std::fprintf(cfg_.err, "%s\n", d.c_str());
        }
        std::fputs("\n", cfg_.out);
        if (!r.error.empty()) std::fprintf(cfg_.err, "Error executing query: %s\n", r.error.c_str());
        fullscan += r.fullscan, sort += r.sort, vm += r.vm_step;
    }
    std::fflush(cfg_.out);
    if (!error.empty()) std::fprintf(cfg_.err, "Failed to prepare query: %s\n", error.c_str());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cost_us_ += uint64_t(ms * 1000);
    if (cfg_.verbose) {
        std::fprintf(cfg_.out, "SQL query cost: %.3f ms\n", ms);
        std::fprintf(cfg_.out, "SQL stmt status: fullscan_step %llu sort %llu vm_step %llu\n",
                     (unsigned long long)fullscan, (unsigned long long)sort, (unsigned long long)vm);
    }
}

void Store::delete_rows(Db& db) {
    for (const Table& t : tables_) db.exec("DELETE FROM " + quoted(t.layout.table));
}

void Store::clear_tables() {
    if (cfg_.path.empty()) {
        for (Db* db : {db_.get(), verify_.get()})
            if (db) delete_rows(*db);
    } else {
        finalize_inserts();
        create_tables(*db_, false);
        prepare_inserts();
    }
    for (Table& t : tables_) t.count = t.first = t.last = 0;
}

// The interval's full database goes to a thread that indexes, queries and empties it; the
// samples go on into its emptied twin meanwhile (the queries of 300k rows take 150 ms, in
// which a storm would fill the rings). The previous interval's thread is joined first.
void Store::hand_off(const std::string& wall_header) {
    if (worker_.joinable()) worker_.join();
    std::swap(db_, spare_);
    for (Table& t : tables_) {
        std::swap(t.insert, t.spare_insert);
        t.count = t.first = t.last = 0;
    }
    db_->exec("BEGIN");
    worker_ = std::thread([this, wall_header] {
        try {
            index_tables(*spare_, true);
            run_queries(*spare_, wall_header);
            index_tables(*spare_, false);
            delete_rows(*spare_);
        } catch (const std::exception& e) {
            std::fprintf(cfg_.err, "%s\n", e.what());
        }
    });
}

void Store::interval(const std::string& wall_header, bool final) {
    update_metadata();
    db_->exec("COMMIT");
    if (verify_) verify_->exec("COMMIT");
    ++commits_;
    pending_ = 0;
    if (spare_ && !final) {
        hand_off(wall_header);
        return;
    }
    if (worker_.joinable()) worker_.join();
    if (!cfg_.query.empty()) {
        const bool memory = cfg_.path.empty();
        for (Db* db : {db_.get(), verify_.get()})
            if (db && memory) index_tables(*db, true);
        run_queries(*db_, wall_header);
        for (Db* db : {db_.get(), verify_.get()})
            if (db && memory) index_tables(*db, false);
        if (!final) clear_tables();
    } else if (!cfg_.path.empty()) {
        std::fprintf(cfg_.out, "Total Inserts: %llu\n", (unsigned long long)inserts_);
        std::fflush(cfg_.out);
    }
    if (!final) {
        db_->exec("BEGIN");
        if (verify_) verify_->exec("BEGIN");
    }
}

}  // namespace perfprof::sql
