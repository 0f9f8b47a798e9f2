// lib/sql's store, functions, statement splitting and printer (SPEC-PROFILERS §P2).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstring>

#include "perf-prof/error.h"
#include "plan_context.h"
#include "sql/functions.h"
#include "sql/planner.h"
#include "sql/query.h"
#include "sql/store.h"
#include "tep_formats.h"

extern "C" {
#include <event-parse.h>
}

namespace perfprof::sql {
namespace {

std::string one(sqlite3* db, const std::string& q, std::string* error = nullptr) {
    Result r;
    EXPECT_TRUE(run_statement(db, q, r)) << r.error;
    if (error) *error = r.error;
    return r.cells.empty() || r.cells[0].empty() ? "" : r.cells[0][0];
}

TEST(SqlFunctions, Formatters) {
    const uint8_t ip[4] = {10, 0, 0, 1};
    EXPECT_EQ(ipv4_text(ip, 4, false), "10.0.0.1");
    EXPECT_EQ(ipv4_text(ip, 4, true), "1.0.0.10");
    EXPECT_EQ(ipv4_text(ip, 3, false), "??");
    uint8_t v6[16] = {};
    v6[15] = 1;
    EXPECT_EQ(ipv6_text(v6, 16), "::1");
    uint8_t sa[28] = {};
    const uint16_t fam = 2;
    std::memcpy(sa, &fam, 2);
    sa[2] = 0x1f, sa[3] = 0x90;  // port 8080, network order
    std::memcpy(sa + 4, ip, 4);
    EXPECT_EQ(ipsa_text(sa, 28, false), "10.0.0.1:8080");
    const uint16_t fam6 = 10;
    std::memcpy(sa, &fam6, 2);
    std::memcpy(sa + 8, v6, 16);
    EXPECT_EQ(ipsa_text(sa, 28, false), "[::1]:8080");
    uint8_t u[16];
    for (int i = 0; i < 16; ++i) u[i] = uint8_t(i);
    EXPECT_EQ(uuid_text(u, 16, false), "00010203-0405-0607-0809-0a0b0c0d0e0f");
    EXPECT_EQ(uuid_text(u, 16, true), "03020100-0504-0706-0809-0a0b0c0d0e0f");
    EXPECT_EQ(mac_text(u, 6), "00:01:02:03:04:05");
    EXPECT_EQ(mac_text(u, 5), "??");
}

const char* fake_ksym(uint64_t addr, void*) {
    return addr == 0x1000 ? "tick_sched_timer" : nullptr;
}

TEST(SqlFunctions, InSql) {
    Db db("");
    Functions fns;
    Symbolic s;
    s.field = "vec";
    s.names = {{1, "TIMER"}, {9, "RCU"}};
    fns.symbolic.push_back({"softirq_entry", "softirq_entry", s});
    fns.ksymbol = fake_ksym;
    ASSERT_EQ(register_functions(db.get(), &fns), SQLITE_OK);
    EXPECT_EQ(one(db.get(), "SELECT symbolic('vec', 9)"), "RCU");
    EXPECT_EQ(one(db.get(), "SELECT symbolic('softirq_entry.vec', 1)"), "TIMER");
    EXPECT_EQ(one(db.get(), "SELECT symbolic('other.vec', 1)"), "UNKNOWN");
    EXPECT_EQ(one(db.get(), "SELECT symbolic(999)"), "UNKNOWN");
    EXPECT_EQ(one(db.get(), "SELECT symbolic(1)"), "TIMER");
    EXPECT_EQ(one(db.get(), "SELECT ksymbol(4096)"), "tick_sched_timer");
    EXPECT_EQ(one(db.get(), "SELECT ksymbol(1)"), "??");
    EXPECT_EQ(one(db.get(), "SELECT syscall(0)"), "read");
    EXPECT_EQ(one(db.get(), "SELECT syscall(100000)"), "??");
    EXPECT_EQ(one(db.get(), "SELECT ipv4_str(x'7f000001')"), "127.0.0.1");
    EXPECT_EQ(one(db.get(), "SELECT mac_str(x'0102')"), "??");
    std::string error;
    one(db.get(), "SELECT ipv4_str(1)", &error);
    EXPECT_EQ(error, "ipv4_str() argument must be BLOB");
    one(db.get(), "SELECT symbolic(1, 1)", &error);
    EXPECT_EQ(error, "symbolic() first argument must be TEXT");
    one(db.get(), "SELECT symbolic('vec', 'x')", &error);
    EXPECT_EQ(error, "symbolic() second argument must be INTEGER");
    one(db.get(), "SELECT ksymbol('x')", &error);
    EXPECT_EQ(error, "ksymbol() argument must be INTEGER");
}

TEST(SqlQuery, SplitsAsSqliteDoes) {
    Db db("");
    std::string error;
    EXPECT_EQ(split_statements(db.get(), "  SELECT 1; SELECT ';' ;  ;\n SELECT 3 -- c\n", &error),
              (std::vector<std::string>{"SELECT 1;", "SELECT ';' ;", "SELECT 3 -- c\n"}));
    EXPECT_EQ(error, "");
    EXPECT_EQ(split_statements(db.get(), "SELECT 1; SELEKT 2; SELECT 3", &error),
              std::vector<std::string>{"SELECT 1;"});
    EXPECT_EQ(error, "near \"SELEKT\": syntax error");
}

std::string printed(Printer& p, sqlite3* db, const std::string& q) {
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    Result r;
    EXPECT_TRUE(run_statement(db, q, r));
    p.print(0, q, r, f);
    std::fclose(f);
    std::string s(buf, len);
    std::free(buf);
    return s;
}

TEST(SqlQuery, PrinterWidthsGrow) {
    Db db("");
    db.exec("CREATE TABLE t (name TEXT, n INTEGER, f REAL, b BLOB, z INTEGER)");
    db.exec("INSERT INTO t VALUES ('ab', 1, 0.5, x'0102', NULL), ('abcdef', 22, 1.25, x'', 3)");
    Printer p;
    const std::string q = "SELECT name, n AS count FROM t";
    EXPECT_EQ(printed(p, db.get(), q),
              "=== SELECT name, n AS count FROM t ===\n"
              "name | count\n"
              "-----+------\n"
              "ab   | 1    \n"
              "abcdef | 22   \n");
    // The next interval starts with the widths reached.
    EXPECT_EQ(printed(p, db.get(), q),
              "=== SELECT name, n AS count FROM t ===\n"
              "name   | count\n"
              "-------+------\n"
              "ab     | 1    \n"
              "abcdef | 22   \n");
    Printer p2;
    EXPECT_EQ(printed(p2, db.get(), "SELECT f, b, z FROM t"),
              "=== SELECT f, b, z FROM t ===\n"
              "f | b | z\n"
              "--+---+--\n"
              "0.500000 | [BLOB:2] | NULL\n"
              "1.250000 | [BLOB:0] | 3   \n");
    Printer p3;
    EXPECT_EQ(printed(p3, db.get(), "CREATE TABLE u (x)"), "=== CREATE TABLE u (x) ===\n");
}

TEST(SqlQuery, CompareReportsDifferences) {
    Result a, b;
    a.names = b.names = {"n"};
    a.types = b.types = {{SQLITE_INTEGER}};
    a.cells = {{"1"}};
    b.cells = {{"2"}};
    EXPECT_EQ(compare(a, b), std::vector<std::string>{"Column 0 INTEGER mismatch: main=1, verify=2"});
    EXPECT_TRUE(compare(a, a).empty());
}

// A sched_wakeup-like event with a dynamic string and narrow signed/unsigned fields.
struct SqlStoreTest : ::testing::Test {
    tep::Tep tep{unit::recorded_formats_dir()};
    tep_event* ev = nullptr;
    std::vector<uint8_t> raw;
    void SetUp() override {
        ev = unit::parse_format(tep, "sqltest", "ev", 4242,
                                "\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
                                "\tfield:s8 small;\toffset:12;\tsize:1;\tsigned:1;\n"
                                "\tfield:u16 port;\toffset:14;\tsize:2;\tsigned:0;\n"
                                "\tfield:int pid;\toffset:16;\tsize:4;\tsigned:1;\n",
                                "\"name=%s pid=%d\", __get_str(name), REC->pid");
        ASSERT_NE(ev, nullptr);
        raw.assign(32, 0);
        const uint32_t loc = (4u << 16) | 20;  // "abc\0" at 20
        std::memcpy(&raw[8], &loc, 4);
        raw[12] = 0xfe;  // -2
        raw[14] = 0xff, raw[15] = 0xff;
        const int32_t pid = -7;
        std::memcpy(&raw[16], &pid, 4);
        std::memcpy(&raw[20], "abc", 4);
    }
    Sample sample(uint64_t t) const {
        Sample s;
        s.pid = 10, s.tid = 11, s.time = t, s.cpu = 1, s.period = 1;
        s.raw = raw.data(), s.raw_size = uint32_t(raw.size());
        return s;
    }
};

TEST_F(SqlStoreTest, FileModeBatchesAndKeepsRows) {
    char path[] = "/tmp/sql_store_testXXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    FILE* devnull = std::fopen("/dev/null", "w");
    {
        StoreConfig cfg;
        cfg.path = path;
        cfg.out = cfg.err = devnull;
        Store store(cfg, {EventDef{ev, "ev", "pid>0", false, 0, ""}});
        for (int i = 0; i < 4500; ++i) store.insert(0, sample(uint64_t(100 + i)));
        EXPECT_EQ(store.commits(), 2u);  // every 2000 rows
        store.interval("", false);
        EXPECT_EQ(store.commits(), 3u);
        store.insert(0, sample(1));
        store.interval("", true);
    }
    std::fclose(devnull);
    Db db(path);
    EXPECT_EQ(one(db.get(), "SELECT COUNT(*) FROM ev"), "4501");
    EXPECT_EQ(one(db.get(),
                  "SELECT name || ',' || small || ',' || port || ',' || pid || ',' || _pid || ',' || _tid "
                  "|| ',' || _cpu FROM ev LIMIT 1"),
              "abc,-2,65535,-7,10,11,1");
    EXPECT_EQ(one(db.get(), "SELECT typeof(name) FROM ev LIMIT 1"), "text");
    EXPECT_EQ(one(db.get(),
                  "SELECT sample_count || ' ' || first_sample_time || ' ' || last_sample_time || ' ' || "
                  "field_count || ' ' || filter_expression FROM event_metadata WHERE table_name = 'ev'"),
              "4501 100 1 12 pid>0");
    unlink(path);
}

TEST_F(SqlStoreTest, MemoryModeQueriesThenClears) {
    char* buf = nullptr;
    size_t len = 0;
    FILE* out = open_memstream(&buf, &len);
    {
        StoreConfig cfg;
        cfg.query = "SELECT COUNT(*) AS n FROM ev; SELECT name FROM ev WHERE pid < 0 LIMIT 1";
        cfg.out = cfg.err = out;
        Store store(cfg, {EventDef{ev, "ev", "", false, 0, ""}});
        for (int i = 0; i < 3; ++i) store.insert(0, sample(uint64_t(i)));
        store.interval("HEAD\n", false);
        store.insert(0, sample(9));
        store.interval("HEAD\n", true);
    }
    std::fclose(out);
    const std::string s(buf, len);
    std::free(buf);
    EXPECT_EQ(s,
              "sqltest:ev: Chosen 'pid' field for indexing\n"
              "HEAD\n=== SELECT COUNT(*) AS n FROM ev; ===\nn\n-\n3\n\n"
              "=== SELECT name FROM ev WHERE pid < 0 LIMIT 1 ===\nname\n----\nabc \n\n"
              "HEAD\n=== SELECT COUNT(*) AS n FROM ev; ===\nn\n-\n1\n\n"
              "=== SELECT name FROM ev WHERE pid < 0 LIMIT 1 ===\nname\n----\nabc \n\n");
}

TEST_F(SqlStoreTest, DuplicateTableNamesAreRefused) {
    StoreConfig cfg;
    cfg.query = "x";
    try {
        Store store(cfg, {EventDef{ev, "ev", "", false, 0, ""}, EventDef{ev, "ev", "", false, 0, ""}});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "duplicate table name ev, use alias=");
    }
}

TEST_F(SqlStoreTest, IndexColumnChoice) {
    const Layout l = layout_of(*ev, print_info(*ev, 1), "ev");
    std::string warning;
    EXPECT_EQ(index_column(l, "", {"SELECT pid, COUNT(*) FROM ev WHERE pid > 100 AND small = 1 GROUP BY pid"},
                           &warning),
              "pid");
    EXPECT_EQ(index_column(l, "", {"SELECT _time FROM ev GROUP BY _time, pid ORDER BY _time"}, &warning),
              "_time");
    EXPECT_EQ(index_column(l, "", {"SELECT pid FROM other WHERE pid > 1"}, &warning), "");
    EXPECT_EQ(warning, "");
    EXPECT_EQ(index_column(l, "name", {}, &warning), "name");
    EXPECT_EQ(index_column(l, "nope", {"SELECT * FROM ev WHERE port = 1"}, &warning), "port");
    EXPECT_EQ(warning, "index field 'nope' not found, using 'port'");
}

}  // namespace
}  // namespace perfprof::sql
