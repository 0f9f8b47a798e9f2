// lib/sql's reading of print formats and its table layout (SPEC-PROFILERS §P2 "Event tables").
#include <gtest/gtest.h>

#include "plan_context.h"
#include "sql/print_format.h"
#include "sql/schema.h"
#include "tep/tep.h"

extern "C" {
#include <event-parse.h>
}

namespace perfprof::sql {
namespace {

using V = std::vector<std::string>;

TEST(SqlPrintFormat, Conversions) {
    EXPECT_EQ(conversions("vec=%u [action=%s]"), (V{"u", "s"}));
    EXPECT_EQ(conversions("a=%pISpc b=%*d 100%% %llx %p %-08.3lu"), (V{"pISpc", "*", "d", "llx", "p", "lu"}));
    EXPECT_EQ(conversions("%pI4, %pi6 %ps"), (V{"pI4", "pi6", "ps"}));
    EXPECT_EQ(conversions("trailing %"), V{});
    EXPECT_EQ(conversions("%l"), V{});
    EXPECT_EQ(conversions(""), V{});
}

struct SqlFormats : ::testing::Test {
    tep::Tep tep{unit::recorded_formats_dir()};
};

TEST_F(SqlFormats, SymbolicOfSoftirq) {
    const PrintInfo info = print_info(*tep.event("irq", "softirq_entry"), 1);
    ASSERT_EQ(info.symbolic.size(), 1u);
    EXPECT_EQ(info.symbolic[0].field, "vec");
    EXPECT_EQ(info.symbolic[0].names.size(), 10u);
    EXPECT_EQ(info.symbolic[0].names.at(9), "RCU");
    EXPECT_EQ(info.conv.at("vec"), "u");
}

TEST_F(SqlFormats, KvmExitFollowsTheIsaCondition) {
    const tep_event& ev = *tep.event("kvm", "kvm_exit");
    const PrintInfo intel = print_info(ev, 1);
    ASSERT_EQ(intel.symbolic.size(), 1u);
    EXPECT_EQ(intel.symbolic[0].field, "exit_reason");
    EXPECT_EQ(intel.symbolic[0].mask, 0xffffu);
    EXPECT_EQ(intel.symbolic[0].names.at(12), "HLT");
    const PrintInfo amd = print_info(ev, 2);
    ASSERT_EQ(amd.symbolic.size(), 1u);
    EXPECT_EQ(amd.symbolic[0].names.at(0), "read_cr0");
    EXPECT_EQ(amd.symbolic[0].mask, ~0ULL);
    // Both branches when the machine is neither.
    EXPECT_GT(print_info(ev, 0).symbolic[0].names.size(), intel.symbolic[0].names.size());
}

ColType type_of(const Layout& l, const std::string& name) {
    for (const Column& c : l.columns)
        if (c.name == name) return c.type;
    ADD_FAILURE() << name;
    return ColType::Null;
}

Layout layout(tep::Tep& tep, const char* sys, const char* name) {
    const tep_event& ev = *tep.event(sys, name);
    return layout_of(ev, print_info(ev, 1), name);
}

TEST_F(SqlFormats, ColumnTypes) {
    const Layout w = layout(tep, "sched", "sched_wakeup");
    ASSERT_GE(w.columns.size(), 3u);
    EXPECT_EQ(w.columns[0].name, "common_flags");  // common_type omitted
    EXPECT_EQ(w.columns[1].name, "common_preempt_count");
    EXPECT_EQ(w.columns[2].name, "common_pid");
    EXPECT_EQ(type_of(w, "comm"), ColType::Text);
    EXPECT_EQ(type_of(w, "pid"), ColType::Integer);
    const Layout s = layout(tep, "sock", "inet_sock_set_state");
    EXPECT_EQ(type_of(s, "saddr"), ColType::Blob);  // __u8[4] printed %pI4
    EXPECT_EQ(type_of(s, "saddr_v6"), ColType::Blob);
    EXPECT_EQ(type_of(s, "family"), ColType::Integer);
    EXPECT_EQ(type_of(layout(tep, "raw_syscalls", "sys_enter"), "args"), ColType::Blob);  // unsigned long[6]
    EXPECT_EQ(column_type("u128 x", 0, 16, ""), ColType::Null);
    EXPECT_EQ(column_type("u8 mac[6]", TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_STRING, 6, "x"), ColType::Blob);
    EXPECT_EQ(column_type("unsigned char s[6]", TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_STRING, 6, "s"),
              ColType::Text);
    EXPECT_EQ(column_type("__data_loc char[] name", TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_STRING, 4, "s"),
              ColType::Text);
    EXPECT_EQ(column_type("__data_loc u32[] v", TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY, 4, ""),
              ColType::Blob);
}

TEST_F(SqlFormats, FunctionList) {
    auto fl = [](const Layout& l) {
        std::string s;
        for (const std::string& f : l.functions) s += (s.empty() ? "" : ", ") + f;
        return s;
    };
    EXPECT_EQ(fl(layout(tep, "irq", "softirq_entry")), "symbolic('softirq_entry.vec', vec)");
    EXPECT_EQ(fl(layout(tep, "timer", "hrtimer_expire_entry")), "ksymbol(function)");
    EXPECT_EQ(fl(layout(tep, "raw_syscalls", "sys_enter")), "syscall(id)");
    EXPECT_EQ(fl(layout(tep, "syscalls", "sys_enter_openat")), "syscall(__syscall_nr)");
    EXPECT_EQ(fl(layout(tep, "tcp", "tcp_probe")),
              "symbolic('tcp_probe.family', family), ipsa_str(saddr), ipsa_str(daddr)");
}

TEST_F(SqlFormats, CreateAndInsertText) {
    const Layout w = layout(tep, "sched", "sched_wakeup");
    EXPECT_EQ(
        create_sql(w).rfind("CREATE TABLE \"sched_wakeup\" (_pid INTEGER, _tid INTEGER, _time INTEGER, _cpu "
                            "INTEGER, _period INTEGER, \"common_flags\" INTEGER",
                            0),
        0u);
    EXPECT_EQ(insert_sql(w), "INSERT INTO \"sched_wakeup\" VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    EXPECT_EQ(quoted("a\"b"), "\"a\"\"b\"");
}

}  // namespace
}  // namespace perfprof::sql
