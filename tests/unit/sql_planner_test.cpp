// lib/sql's planner (SPEC-PROFILERS §P2 memory mode): the kernel filter pushed down from the
// statements' WHERE clauses, and the sql profiler's plan against the recorded formats.
#include <gtest/gtest.h>

#include "perf-prof/error.h"
#include "plan_context.h"
#include "sql/planner.h"
#include "sql/print_format.h"
#include "sql/schema.h"
#include "tep/tep.h"

namespace perfprof::sql {
namespace {

struct SqlPlanner : ::testing::Test {
    tep::Tep tep{unit::recorded_formats_dir()};
    Layout wakeup;
    void SetUp() override {
        const tep_event& ev = *tep.event("sched", "sched_wakeup");
        wakeup = layout_of(ev, print_info(ev, 1), "sched_wakeup");
    }
    std::string f(std::vector<std::string> st) { return pushdown_filter(wakeup, st); }
};

TEST_F(SqlPlanner, PushesDownAndedConstraints) {
    EXPECT_EQ(f({"SELECT pid, comm, COUNT(*) FROM sched_wakeup WHERE pid > 100 AND prio = 120 GROUP BY pid "
                 "LIMIT 10"}),
              "pid>100&&prio==120");
    EXPECT_EQ(f({"SELECT pid FROM sched_wakeup WHERE pid != 0 AND pid >= 10 AND pid <> 5 AND pid <= 9"}),
              "pid!=0&&pid>=10&&pid!=5&&pid<=9");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup AS w WHERE w.comm GLOB 'k*' AND _cpu = 0;"}),
              "comm~\"k*\"&&CPU==0");
    EXPECT_EQ(
        f({"SELECT 1 FROM sched_wakeup WHERE comm = 'sshd'", "SELECT 1 FROM sched_wakeup WHERE pid = 1"}),
        "(comm==\"sshd\")||(pid==1)");
    // Statements on other tables do not matter.
    EXPECT_EQ(f({"SELECT 1 FROM other", "SELECT 1 FROM sched_wakeup WHERE pid < 5"}), "pid<5");
}

TEST_F(SqlPlanner, NothingWhenAnyStatementReadsMore) {
    EXPECT_EQ(f({"SELECT COUNT(*) FROM sched_wakeup"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid = 1", "SELECT COUNT(*) FROM sched_wakeup"}), "");
    EXPECT_EQ(f({"SELECT pid FROM sched_wakeup WHERE pid < 100 OR pid > 2000"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE (pid < 100)"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid < -1"}), "");       // a sign
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid < 1.5"}), "");      // not an integer
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE 100 < pid"}), "");      // literal first
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE _pid = 1"}), "");       // not a record field
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE comm > 'a'"}), "");     // text order
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE comm = 'a\"b'"}), "");  // a quote in the value
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid = prio"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup w, sched_switch s WHERE w.pid = 1"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid = 1 UNION SELECT 2 FROM sched_wakeup"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM x WHERE a IN (SELECT pid FROM sched_wakeup WHERE pid = 1)"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid = 1 AND"}), "");
    EXPECT_EQ(f({"SELECT 1 FROM sched_wakeup WHERE pid"}), "");
}

TEST(SqlTokens, QuotesCommentsOperators) {
    const std::vector<Token> t = tokens("a.b>='x''y' -- c\n\"q\"\"\" [z]<>1");
    ASSERT_EQ(t.size(), 7u);
    EXPECT_EQ(t[0].text, "a.b");
    EXPECT_EQ(t[1].text, ">=");
    EXPECT_EQ(t[2].kind, Token::String);
    EXPECT_EQ(t[2].text, "x'y");
    EXPECT_EQ(t[3].text, "q\"");
    EXPECT_EQ(t[4].text, "z");
    EXPECT_EQ(t[5].text, "<>");
    EXPECT_EQ(t[6].kind, Token::Number);
    EXPECT_TRUE(tokens("'unterminated").size() == 1);
}

// ---- the profiler's plan ----

using Args = std::vector<std::string>;

std::string plan_error(const Args& args) {
    try {
        unit::PlanContext ctx(args);
        ctx.plan();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(SqlPlan, EventsAttributesAndPushdown) {
    unit::PlanContext ctx({"sql", "-e", "sched:sched_wakeup,sched:sched_switch/prev_pid>0/", "-i", "1000",
                           "--query",
                           "SELECT COUNT(*) FROM sched_wakeup WHERE prio < 100; SELECT * FROM sched_switch "
                           "WHERE next_pid = 1"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    const uint64_t want = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
    EXPECT_GE(p.pages, 256);
    for (const EventSpec& e : p.events) {
        EXPECT_EQ(e.attr.sample_type, want);
        EXPECT_EQ(e.attr.sample_period, 1u);
        EXPECT_TRUE(e.attr.watermark);
        EXPECT_EQ(e.attr.wakeup_watermark, uint32_t(p.pages) * 4096 / 2);
    }
    EXPECT_EQ(p.events[0].filter, "prio<100");    // pushed down
    EXPECT_EQ(p.events[1].filter, "prev_pid>0");  // the user's filter wins
    EXPECT_TRUE(p.user_filter);
    const std::string out = ctx.take();
    EXPECT_NE(out.find("sched:sched_wakeup: SQL Query planner filter: prio<100\n"), std::string::npos) << out;
    EXPECT_NE(out.find("sched:sched_wakeup: Chosen 'prio' field for indexing\n"), std::string::npos) << out;
}

TEST(SqlPlan, StatementsOverEveryTable) {
    // The statements split once both tables exist: the second one's constraints count too.
    unit::PlanContext ctx(
        {"sql", "-e", "sched:sched_wakeup,sched:sched_switch", "-i", "1000", "--query",
         "SELECT * FROM sched_wakeup WHERE pid = 1; SELECT * FROM sched_switch WHERE next_pid = 2"});
    EventPlan p = ctx.plan();
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_EQ(p.events[0].filter, "pid==1");
    EXPECT_EQ(p.events[1].filter, "next_pid==2");
    EXPECT_NE(ctx.take().find("sched:sched_switch: Chosen 'next_pid' field for indexing\n"),
              std::string::npos);
}

TEST(SqlPlan, FileModeAndErrors) {
    EXPECT_EQ(
        plan_error({"sql", "-e", "sched:sched_wakeup"}).rfind("Must specify either --query or --output2", 0),
        0u);
    EXPECT_EQ(plan_error({"sql", "-e", "sched:sched_wakeup", "--query", "SELECT 1"})
                  .rfind("--query without --output2 requires -i (periodic interval).", 0),
              0u);
    EXPECT_EQ(
        plan_error({"sql", "-e", "sched:sched_wakeup,sched:sched_wakeup", "-i", "9", "--query", "SELECT 1"}),
        "duplicate table name sched_wakeup, use alias=");
    EXPECT_EQ(plan_error({"sql", "-e", "sched:sched_wakeup,sched:sched_wakeup//alias=w2/", "-i", "9",
                          "--query", "x"}),
              "no error");
    EXPECT_EQ(plan_error({"sql", "-e", "sched:sched_wakeup", "--output2", "/nonexistent/d/x.db"})
                  .rfind("cannot open database /nonexistent/d/x.db", 0),
              0u);
}

}  // namespace
}  // namespace perfprof::sql
