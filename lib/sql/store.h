// The SQLite store of SPEC §P2: one table per event in an in-memory database or a file,
// inserts batched in transactions through prepared statements, event_metadata, the queries
// at each interval, and the --verify twin database.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perf-prof/sample.h"
#include "sql/functions.h"
#include "sql/query.h"
#include "sql/schema.h"

struct tep_event;

namespace perfprof::sql {

struct EventDef {
    const tep_event* tp = nullptr;
    std::string table;   // alias= or the event name
    std::string filter;  // as given, for event_metadata
    bool stack = false;
    int max_stack = 0;
    std::string index;  // index= attribute ("" = chosen from the queries)
};

struct StoreConfig {
    std::string path;   // "" = in memory
    std::string query;  // the user's SQL ("" = none)
    bool verify = false;
    int isa = 1;  // kvm's isa condition (machine_isa())
    int verbose = 0;
    const char* (*ksymbol)(uint64_t addr, void* user) = nullptr;
    void* user = nullptr;
    FILE* out = stdout;
    FILE* err = stderr;
};

// A database handle with the single-writer tuning.
class Db {
public:
    explicit Db(const std::string& path);  // throws Error with SQLite's message
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;
    sqlite3* get() const { return db_; }
    void exec(const std::string& sql);  // throws Error "{sql}: {message}"

private:
    sqlite3* db_ = nullptr;
};

class Store {
public:
    Store(StoreConfig cfg, std::vector<EventDef> events);  // throws Error
    ~Store();
    void insert(int event, const Sample& s) noexcept;
    // The -i tick (and, with final, the exit): metadata, commit, queries, clearing.
    void interval(const std::string& wall_header, bool final);
    // Memory mode: the kernel filter the queries allow for event `event` (SPEC §P2 "Constraint
    // push-down"), "" when none; recorded as its filter_expression.
    std::string pushdown(int event);
    uint64_t inserts() const { return inserts_; }
    uint64_t commits() const { return commits_; }
    double cost_ms() const { return double(cost_us_.load()) / 1000; }

private:
    struct Table {
        EventDef def;
        Layout layout;
        sqlite3_stmt* insert = nullptr;
        sqlite3_stmt* verify_insert = nullptr;
        sqlite3_stmt* spare_insert = nullptr;  // into spare_
        std::string index;
        bool build_index = false;  // memory mode: index= or a WHERE on it (see index_tables)
        uint64_t count = 0, first = 0, last = 0;
        int64_t created = 0;
    };
    void create_tables(Db& db, bool announce);
    void choose_indexes(Db& db);
    void index_tables(Db& db, bool create);
    void prepare_inserts();
    void finalize_inserts();
    void update_metadata();
    void run_queries(Db& db, const std::string& wall_header);
    void delete_rows(Db& db);
    void clear_tables();
    void hand_off(const std::string& wall_header);

    StoreConfig cfg_;
    std::vector<Table> tables_;
    Functions fns_;
    std::unique_ptr<Db> db_, verify_;
    std::unique_ptr<Db> spare_;  // memory mode: the twin queried by worker_ while db_ fills
    std::thread worker_;
    std::vector<std::string> statements_;
    Printer printer_;
    uint64_t inserts_ = 0, commits_ = 0, pending_ = 0;
    std::atomic<uint64_t> cost_us_{0};
};

}  // namespace perfprof::sql
