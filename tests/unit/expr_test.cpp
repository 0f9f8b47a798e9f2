#include "filter/expr.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "perf-prof/error.h"

using namespace perfprof::filter;

namespace {

// A synthetic sched_switch-like record:
//   0 unsigned short common_type; 2 unsigned char common_flags; 3 char sc (signed 1);
//   4 int common_pid; 8 char prev_comm[16]; 24 int prev_pid; 28 int prev_prio; 32 long prev_state;
//   40 unsigned int u32; 44 short s16; 46 unsigned short u16; 48 unsigned long u64;
//   56 int arr[4]; 72 __data_loc char[] name; 76 __data_loc char[] other; 80.. dynamic data
std::vector<Field> fields() {
    return {
        {"common_type", 0, 2, false, false, false, 0, false},
        {"common_flags", 2, 1, false, false, false, 0, false},
        {"sc", 3, 1, true, false, false, 0, false},
        {"common_pid", 4, 4, true, false, false, 0, false},
        {"prev_comm", 8, 16, true, true, false, 1, true},
        {"prev_pid", 24, 4, true, false, false, 0, false},
        {"prev_prio", 28, 4, true, false, false, 0, false},
        {"prev_state", 32, 8, true, false, false, 0, false},
        {"u32", 40, 4, false, false, false, 0, false},
        {"s16", 44, 2, true, false, false, 0, false},
        {"u16", 46, 2, false, false, false, 0, false},
        {"u64", 48, 8, false, false, false, 0, false},
        {"arr", 56, 16, true, false, false, 4, true},
        {"name", 72, 4, true, true, true, 1, true},
        {"other", 76, 4, true, true, true, 1, true},
    };
}

template <class T>
void put(std::vector<uint8_t>& r, size_t off, T v) {
    std::memcpy(r.data() + off, &v, sizeof v);
}

std::vector<uint8_t> record() {
    std::vector<uint8_t> r(80);
    put<uint16_t>(r, 0, 316);
    put<uint8_t>(r, 2, 0x81);
    put<int8_t>(r, 3, -3);
    put<int32_t>(r, 4, 1234);
    std::memcpy(r.data() + 8, "bash", 5);
    put<int32_t>(r, 24, 42);
    put<int32_t>(r, 28, 120);
    put<int64_t>(r, 32, -2);
    put<uint32_t>(r, 40, 0xfffffff0u);
    put<int16_t>(r, 44, -5);
    put<uint16_t>(r, 46, 65535);
    put<uint64_t>(r, 48, 0x8000000000000000ull);
    for (int i = 0; i < 4; ++i) put<int32_t>(r, 56 + 4 * i, 10 * (i + 1));
    const char n1[] = "java-thread";
    const char n2[] = "kworker/0:1";
    // Dynamic data after the fixed part (sized up front; vector::insert trips a GCC 12
    // -Warray-bounds false positive at -O2).
    size_t o1 = 80, o2 = o1 + sizeof n1;
    r.resize(o2 + sizeof n2);
    std::memcpy(r.data() + o1, n1, sizeof n1);
    std::memcpy(r.data() + o2, n2, sizeof n2);
    put<uint32_t>(r, 72, uint32_t(o1) | uint32_t(sizeof n1) << 16);
    put<uint32_t>(r, 76, uint32_t(o2) | uint32_t(sizeof n2) << 16);
    return r;
}

struct Fixture {
    std::vector<Field> f = fields();
    std::vector<uint8_t> r = record();
    EvalContext ctx() const {
        EvalContext c;
        c.data = r.data();
        c.size = uint32_t(r.size());
        c.cpu = 3;
        c.pid = 777;
        return c;
    }
};

int64_t ev(std::string_view src) {
    Fixture fx;
    Program p = compile(src, fx.f);
    return p.eval(fx.ctx());
}

CompileError err(std::string_view src) {
    Fixture fx;
    try {
        compile(src, fx.f);
    } catch (const CompileError& e) {
        EXPECT_EQ(e.kind(), perfprof::Error::Kind::Usage);
        return e;
    }
    ADD_FAILURE() << "no error for " << src;
    return CompileError("", 0, "");
}

}  // namespace

TEST(Expr, Literals) {
    EXPECT_EQ(ev("42"), 42);
    EXPECT_EQ(ev("0x1F"), 31);
    EXPECT_EQ(ev("0X10"), 16);
    EXPECT_EQ(ev("017"), 15);
    EXPECT_EQ(ev("0"), 0);
    EXPECT_EQ(ev("'a'"), 97);
    EXPECT_EQ(ev("'\\n'"), 10);
    EXPECT_EQ(ev("'\\q'"), 'q');
    EXPECT_EQ(ev("0xffffffffffffffff"), -1);
    EXPECT_EQ(ev("4294967296"), 4294967296LL);
}

TEST(Expr, StringLiterals) {
    Fixture fx;
    Program p = compile("\"a\\nb\\\"c\"", fx.f);
    EXPECT_TRUE(p.result_is_string());
    EXPECT_STREQ(reinterpret_cast<const char*>(p.eval(fx.ctx())), "a\nb\"c");
    Program q = compile("\"first\" \"second\"", fx.f);  // adjacent: second skipped
    EXPECT_STREQ(reinterpret_cast<const char*>(q.eval(fx.ctx())), "first");
}

TEST(Expr, CommentsAndWhitespace) {
    EXPECT_EQ(ev("1 + # comment\n 2 // another\n * 3"), 7);
    EXPECT_EQ(ev("\n\t 5 \n"), 5);
}

TEST(Expr, FieldsSignedUnsignedBySize) {
    EXPECT_EQ(ev("common_type"), 316);
    EXPECT_EQ(ev("common_flags"), 0x81);  // unsigned char: zero-extended
    EXPECT_EQ(ev("sc"), -3);              // signed char: sign-extended
    EXPECT_EQ(ev("common_pid"), 1234);
    EXPECT_EQ(ev("prev_state"), -2);
    EXPECT_EQ(ev("u32"), 0xfffffff0LL);
    EXPECT_EQ(ev("s16"), -5);
    EXPECT_EQ(ev("u16"), 65535);
    EXPECT_EQ(ev("u64"), INT64_MIN);
}

TEST(Expr, Builtins) {
    EXPECT_EQ(ev("_cpu"), 3);
    EXPECT_EQ(ev("_pid"), 777);
    EXPECT_EQ(ev("_cpu * 1000 + _pid"), 3777);
}

TEST(Expr, KeyOnly) {
    Fixture fx;
    Program p = compile("key * 2", fx.f, CompileOptions{true});
    EvalContext c;
    c.key = 21;
    EXPECT_EQ(p.eval(c), 42);
    EXPECT_THROW(compile("prev_pid", fx.f, CompileOptions{true}), CompileError);
}

TEST(Expr, CharArraysAndArrays) {
    EXPECT_EQ(ev("prev_comm == \"bash\""), 1);
    EXPECT_EQ(ev("prev_comm != \"bash\""), 0);
    EXPECT_EQ(ev("\"bash\" == prev_comm"), 1);
    EXPECT_EQ(ev("prev_comm[1]"), 'a');
    EXPECT_EQ(ev("*prev_comm"), 'b');
    EXPECT_EQ(ev("arr[0] + arr[3]"), 50);
    EXPECT_EQ(ev("*(arr + 2)"), 30);
    EXPECT_EQ(ev("2[arr]"), 30);
}

TEST(Expr, DataLoc) {
    EXPECT_EQ(ev("name == \"java-thread\""), 1);
    EXPECT_EQ(ev("other == \"kworker/0:1\""), 1);  // resolved through its own loc
    EXPECT_EQ(ev("name_offset"), 80);
    EXPECT_EQ(ev("name_len"), 12);
    EXPECT_EQ(ev("other_offset"), 92);
    EXPECT_EQ(ev("name ~ \"java*\""), 1);
}

TEST(Expr, DataLocOutOfRangeIsEmpty) {
    Fixture fx;
    put<uint32_t>(fx.r, 72, 5000u | (4u << 16));
    Program p = compile("name == \"\"", fx.f);
    EXPECT_EQ(p.eval(fx.ctx()), 1);
}

TEST(Expr, ShortRecordReadsZero) {
    Fixture fx;
    Program p = compile("prev_pid + u64", fx.f);
    EvalContext c = fx.ctx();
    c.size = 24;  // prev_pid and u64 lie beyond
    EXPECT_EQ(p.eval(c), 0);
}

TEST(Expr, Arithmetic) {
    EXPECT_EQ(ev("7 * 6"), 42);
    EXPECT_EQ(ev("7 / 2"), 3);
    EXPECT_EQ(ev("-7 / 2"), -3);
    EXPECT_EQ(ev("-7 % 3"), -1);
    EXPECT_EQ(ev("7 + 2"), 9);
    EXPECT_EQ(ev("7 - 9"), -2);
    EXPECT_EQ(ev("1 << 40"), 1LL << 40);
    EXPECT_EQ(ev("-16 >> 2"), -4);
    EXPECT_EQ(ev("6 & 3"), 2);
    EXPECT_EQ(ev("6 ^ 3"), 5);
    EXPECT_EQ(ev("6 | 3"), 7);
    EXPECT_EQ(ev("-5"), -5);
    EXPECT_EQ(ev("+5"), 5);
    EXPECT_EQ(ev("~0"), -1);
    EXPECT_EQ(ev("!0"), 1);
    EXPECT_EQ(ev("!7"), 0);
    EXPECT_EQ(ev("0x7fffffffffffffff + 1"), INT64_MIN);  // wraps
}

TEST(Expr, DivisionByZeroIsDefined) {
    EXPECT_EQ(ev("5 / 0"), 0);
    EXPECT_EQ(ev("5 % 0"), 0);
    EXPECT_EQ(ev("u32 / (prev_pid - 42)"), 0);
    EXPECT_EQ(ev("0x8000000000000000 / -1"), 0);  // unsigned literal: unsigned division
    EXPECT_EQ(ev("(long)0x8000000000000000 / -1"), INT64_MIN);
    EXPECT_EQ(ev("(long)0x8000000000000000 % -1"), 0);
}

TEST(Expr, UnsignedSemantics) {
    EXPECT_EQ(ev("u32 > 0"), 1);
    EXPECT_EQ(ev("s16 < 0"), 1);
    EXPECT_EQ(ev("(unsigned long)s16 > 0"), 1);  // unsigned comparison
    EXPECT_EQ(ev("u64 >> 63"), 1);               // logical shift
    EXPECT_EQ(ev("prev_state >> 1"), -1);        // arithmetic shift
    EXPECT_EQ(ev("u64 / 2"), 0x4000000000000000LL);
    EXPECT_EQ(ev("-1 < u16"), 0);  // -1 compared unsigned
}

TEST(Expr, Comparisons) {
    EXPECT_EQ(ev("1 < 2"), 1);
    EXPECT_EQ(ev("2 < 2"), 0);
    EXPECT_EQ(ev("2 <= 2"), 1);
    EXPECT_EQ(ev("3 > 2"), 1);
    EXPECT_EQ(ev("2 >= 3"), 0);
    EXPECT_EQ(ev("2 == 2"), 1);
    EXPECT_EQ(ev("2 != 2"), 0);
}

TEST(Expr, Precedence) {
    EXPECT_EQ(ev("1 + 2 * 3"), 7);
    EXPECT_EQ(ev("(1 + 2) * 3"), 9);
    EXPECT_EQ(ev("10 - 4 - 3"), 3);  // left assoc
    EXPECT_EQ(ev("100 / 10 / 5"), 2);
    EXPECT_EQ(ev("1 << 2 + 1"), 8);      // + binds tighter than <<
    EXPECT_EQ(ev("1 < 2 == 1"), 1);      // < binds tighter than ==
    EXPECT_EQ(ev("2 == 2 & 1"), 1);      // == tighter than &
    EXPECT_EQ(ev("6 & 3 ^ 1"), 3);       // & tighter than ^
    EXPECT_EQ(ev("1 ^ 3 | 4"), 6);       // ^ tighter than |
    EXPECT_EQ(ev("1 | 2 && 0"), 0);      // | tighter than &&
    EXPECT_EQ(ev("1 || 0 && 0"), 1);     // && tighter than ||
    EXPECT_EQ(ev("0 || 1 ? 5 : 6"), 5);  // || tighter than ?:
    EXPECT_EQ(ev("-2 * 3"), -6);
    EXPECT_EQ(ev("!1 + 1"), 1);  // unary tighter than +
    EXPECT_EQ(ev("~1 & 3"), 2);
    EXPECT_EQ(ev("1 ? 2 : 0 ? 3 : 4"), 2);  // right assoc
    EXPECT_EQ(ev("0 ? 2 : 0 ? 3 : 4"), 4);
    EXPECT_EQ(ev("1, 2, 3"), 3);
    EXPECT_EQ(ev("1 ? 2, 3 : 4"), 3);
    EXPECT_EQ(ev("1 + 2 < 4"), 1);
    EXPECT_EQ(ev("8 >> 1 < 5"), 1);  // >> tighter than <
}

TEST(Expr, SpecExamples) {
    EXPECT_EQ(ev("(prev_pid*65536+prev_prio)"), 42 * 65536 + 120);
    EXPECT_EQ(ev("(prev_pid?1:0)|(common_pid?2:0)"), 3);
    EXPECT_EQ(ev("(4096<<2)"), 16384);
    EXPECT_EQ(ev("prev_prio < 200 && prev_pid > 0"), 1);
}

TEST(Expr, ShortCircuit) {
    EXPECT_EQ(ev("0 && (prev_pid = 9)"), 0);
    EXPECT_EQ(ev("(0 && (prev_pid = 9)), prev_pid"), 42);
    EXPECT_EQ(ev("(1 || (prev_pid = 9)), prev_pid"), 42);
    EXPECT_EQ(ev("(1 && (prev_pid = 9)), prev_pid"), 9);
    EXPECT_EQ(ev("(0 ? (prev_pid = 1) : 0), prev_pid"), 42);
    EXPECT_EQ(ev("5 && 7"), 1);
    EXPECT_EQ(ev("0 || 0"), 0);
}

TEST(Expr, AssignmentIsPrivate) {
    Fixture fx;
    Program p = compile("prev_pid = prev_pid + 1, prev_pid", fx.f);
    EXPECT_EQ(p.eval(fx.ctx()), 43);
    EXPECT_EQ(p.eval(fx.ctx()), 43);  // the real record was not modified
    int32_t v;
    std::memcpy(&v, fx.r.data() + 24, 4);
    EXPECT_EQ(v, 42);
    EXPECT_EQ(ev("sc = 300"), 44);                                        // truncated to char
    EXPECT_EQ(ev("prev_pid = prev_prio = 7, prev_pid + prev_prio"), 14);  // right assoc
    EXPECT_EQ(ev("_cpu = 9, _cpu"), 9);
}

TEST(Expr, IncDec) {
    EXPECT_EQ(ev("prev_pid++"), 42);
    EXPECT_EQ(ev("prev_pid++, prev_pid"), 43);
    EXPECT_EQ(ev("++prev_pid"), 43);
    EXPECT_EQ(ev("--prev_pid"), 41);
    EXPECT_EQ(ev("prev_pid--, prev_pid"), 41);
    EXPECT_EQ(ev("u16++, u16"), 0);  // wraps at the field width
    EXPECT_EQ(ev("arr[1]++, arr[1]"), 21);
}

TEST(Expr, PointersAndCasts) {
    EXPECT_EQ(ev("*&prev_pid"), 42);
    EXPECT_EQ(ev("&arr[3] - &arr[0]"), 3);            // element count
    EXPECT_EQ(ev("(long)(arr + 1) - (long)arr"), 4);  // scaled by sizeof(int)
    EXPECT_EQ(ev("*(int *)((char *)arr + 8)"), 30);
    EXPECT_EQ(ev("*(short *)&prev_pid"), 42);
    EXPECT_EQ(ev("(char)300"), 44);
    EXPECT_EQ(ev("(unsigned char)-1"), 255);
    EXPECT_EQ(ev("(short)0x18000"), -32768);
    EXPECT_EQ(ev("(unsigned short)-1"), 65535);
    EXPECT_EQ(ev("(int)0xffffffff"), -1);
    EXPECT_EQ(ev("(unsigned int)-1"), 0xffffffffLL);
    EXPECT_EQ(ev("(unsigned)-1"), 0xffffffffLL);
    EXPECT_EQ(ev("(long)-1"), -1);
    EXPECT_EQ(ev("((char *)prev_comm)[2]"), 's');
    EXPECT_EQ(ev("*(prev_comm + 3)"), 'h');
    EXPECT_EQ(ev("*&*&arr[2] = 5, arr[2]"), 5);
    long x = 1234;
    std::string src = "*(long *)" + std::to_string(reinterpret_cast<uintptr_t>(&x));
    EXPECT_EQ(ev(src), 1234);
}

TEST(Expr, Sizeof) {
    EXPECT_EQ(ev("sizeof(char)"), 1);
    EXPECT_EQ(ev("sizeof(short)"), 2);
    EXPECT_EQ(ev("sizeof(int)"), 4);
    EXPECT_EQ(ev("sizeof(unsigned long)"), 8);
    EXPECT_EQ(ev("sizeof(char *)"), 8);
    EXPECT_EQ(ev("sizeof(int) * 2"), 8);
}

TEST(Expr, StringOps) {
    EXPECT_EQ(ev("prev_comm ~ \"ba*\""), 1);
    EXPECT_EQ(ev("prev_comm ~ \"b?sh\""), 1);
    EXPECT_EQ(ev("prev_comm ~ \"ba\""), 0);  // whole string must match
    EXPECT_EQ(ev("name ~ \"*thread\""), 1);
    EXPECT_EQ(ev("\"abc\" == \"abc\""), 1);
    EXPECT_EQ(ev("\"abc\" != \"abd\""), 1);
    EXPECT_EQ(ev("prev_comm ~ \"x*\" || name ~ \"j*\""), 1);
}

TEST(Expr, Glob) {
    EXPECT_TRUE(glob_match("*", ""));
    EXPECT_TRUE(glob_match("a*c", "abbbc"));
    EXPECT_TRUE(glob_match("a*c", "ac"));
    EXPECT_FALSE(glob_match("a*c", "acb"));
    EXPECT_TRUE(glob_match("a?c", "abc"));
    EXPECT_FALSE(glob_match("a?c", "ac"));
    EXPECT_TRUE(glob_match("[abc]x", "bx"));
    EXPECT_FALSE(glob_match("[abc]x", "dx"));
    EXPECT_TRUE(glob_match("[a-z]1", "q1"));
    EXPECT_FALSE(glob_match("[a-z]1", "Q1"));
    EXPECT_TRUE(glob_match("[^a-z]1", "Q1"));
    EXPECT_TRUE(glob_match("[!a-z]1", "Q1"));
    EXPECT_FALSE(glob_match("[!a-z]1", "q1"));
    EXPECT_TRUE(glob_match("*/*:*", "kworker/0:1"));
    EXPECT_TRUE(glob_match("**a", "bba"));
    EXPECT_FALSE(glob_match("abc", "ab"));
}

// What src's printf() calls print on the fixture's record, and src's value in *value.
std::string printed(std::string_view src, int64_t* value) {
    Fixture fx;
    char buf[256] = {};
    FILE* f = fmemopen(buf, sizeof buf, "w");
    EXPECT_NE(f, nullptr);
    EvalContext c = fx.ctx();
    c.out = f;
    *value = compile(src, fx.f).eval(c);
    std::fclose(f);
    return buf;
}

TEST(Expr, Functions) {
    Fixture fx;
    int64_t v = 0;
    EXPECT_EQ(printed("printf(\"%d->%s %lx\\n\", prev_pid, prev_comm, u32)", &v), "42->bash fffffff0\n");
    EXPECT_EQ(v, 18);

    EXPECT_EQ(ev("ntohl(0x01020304)"), 0x04030201);
    EXPECT_EQ(ev("ntohs(0x0102)"), 0x0201);
    EXPECT_EQ(ev("strncmp(prev_comm, \"basx\", 3)"), 0);
    EXPECT_NE(ev("strncmp(prev_comm, \"basx\", 4)"), 0);
    auto str = [&](const char* src) {
        Program q = compile(src, fx.f);
        EXPECT_TRUE(q.result_is_string());
        return std::string(reinterpret_cast<const char*>(q.eval(fx.ctx())));
    };
    EXPECT_EQ(str("comm_get(_pid)"), "<...>");
    EXPECT_EQ(str("ksymbol(0xffffffff81000000)"), "Unknown");
    EXPECT_EQ(str("syscall_name(0)"), "Unknown");
    EXPECT_EQ(str("exit_reason_str(1, 2)"), "Unknown");
    EXPECT_TRUE(compile("ksymbol(1)", fx.f).uses_ksymbol());
    EXPECT_FALSE(compile("1", fx.f).uses_ksymbol());
    EXPECT_EQ(ev("system(\"exit %d\", 3) >> 8"), 3);
    EXPECT_EQ(ev("system(\"true\")"), 0);
}

TEST(Expr, Hooks) {
    Fixture fx;
    EvalHooks h;
    h.comm_get = [](int pid, void*) -> const char* { return pid == 777 ? "java" : nullptr; };
    h.ksymbol = [](uint64_t, void*) -> const char* { return "schedule"; };
    h.syscall_name = [](int64_t id, void*) -> const char* { return id == 0 ? "read" : nullptr; };
    EvalContext c = fx.ctx();
    c.hooks = &h;
    EXPECT_EQ(compile("comm_get(_pid) ~ \"java*\"", fx.f).eval(c), 1);
    EXPECT_EQ(compile("ksymbol(1) == \"schedule\"", fx.f).eval(c), 1);
    EXPECT_EQ(compile("syscall_name(0) == \"read\"", fx.f).eval(c), 1);
}

TEST(Expr, DefaultProgram) {
    Program p;
    EXPECT_EQ(p.eval(EvalContext{}), 0);
    EXPECT_FALSE(p.result_is_string());
}

TEST(Expr, NoAllocationSteadyState) {
    // Repeated evaluation of a writing program reuses the scratch copy.
    Fixture fx;
    Program p = compile("prev_pid++, prev_pid", fx.f);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(p.eval(fx.ctx()), 43);
}

TEST(ExprErrors, PositionsAndMessages) {
    CompileError e = err("prev_pid > bogus");
    EXPECT_EQ(e.column(), 11u);
    EXPECT_NE(e.message().find("undefined variable"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("column 12"), std::string::npos);

    e = err("(1 + 2");
    EXPECT_EQ(e.column(), 6u);
    EXPECT_NE(e.message().find("')'"), std::string::npos);

    e = err("1 ? 2 3");
    EXPECT_NE(e.message().find("':'"), std::string::npos);
    EXPECT_EQ(e.column(), 6u);

    e = err("arr[1");
    EXPECT_NE(e.message().find("']'"), std::string::npos);

    e = err("prev_pid ~ \"x\"");
    EXPECT_EQ(e.column(), 9u);
    EXPECT_NE(e.message().find("~"), std::string::npos);

    err("1 +");
    err("1 2");
    err("3 = 4");
    err("++3");
    err("*prev_pid");
    err("&5");
    err("089");
    err("0x");
    err("\"abc");
    err("'a");
    err("nosuch(1)");
    err("printf()");
    err("ntohl(1, 2)");
    err("printf(5)");
    err("sizeof(x)");
    err("1 @ 2");
    err("99999999999999999999999");
    err("");
    err("prev_pid[1]");
    err("cpu");  // kernel-only pseudo field: not a variable here
}

TEST(ExprErrors, Diagnostics) {
    CompileError e = err("prev_pid >\n  bogus");
    EXPECT_EQ(e.column(), 2u);  // column within the error's line
    const std::string& d = e.diagnostics();
    EXPECT_EQ(d.rfind("prev_pid >\n  bogus\n  ^ undefined variable 'bogus'\nAvailable variables:\n", 0), 0u)
        << d;
    EXPECT_NE(d.find("\n     unsigned short common_type\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     char prev_comm[16]\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     int arr[4]\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     long prev_state\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     unsigned short name_offset\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     unsigned short name_len\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     char name[]\n"), std::string::npos) << d;
    EXPECT_NE(d.find("\n     char sc\n"), std::string::npos) << d;
}

// Found by tests/fuzz/expr_fuzz: deep nesting overflowed the stack of the recursive parser and
// evaluator; it is a compile error now.
TEST(ExprErrors, NestingLimit) {
    EXPECT_EQ(err(std::string(5000, '(') + "1" + std::string(5000, ')')).message(),
              "expression nested too deeply");
    std::string chain = "1";
    for (int i = 0; i < 10000; i++) chain += "+1";
    EXPECT_EQ(err(chain).message(), "expression nested too deeply");
    EXPECT_EQ(compile(std::string(100, '(') + "1" + std::string(100, ')'), {}).eval({}), 1);
}

// Issue 24: a printf()/system() format reached the C library unchecked; `%s[%f]` on an int
// crashed the run. The format is checked against the arguments' types at compile time.
TEST(ExprErrors, PrintfFormatChecked) {
    CompileError e = err("printf(\"%s[%f] -> %s\\n\", prev_comm, prev_pid, prev_comm)");
    EXPECT_EQ(e.message(),
              "printf format: '%f' needs a floating-point value: expressions have only integers");
    EXPECT_EQ(e.column(), 7u);  // the format
    e = err("printf(\"%s[%s]\\n\", prev_comm, prev_pid)");
    EXPECT_NE(e.message().find("'%s' needs a string (char *), argument 2 is an integer"), std::string::npos);
    EXPECT_EQ(e.column(), 30u);  // prev_pid
    e = err("printf(\"%d\\n\", prev_comm)");
    EXPECT_NE(e.message().find("'%d' needs an integer, argument 1 is a string"), std::string::npos);
    EXPECT_NE(err("printf(\"%d %d\", prev_pid)").message().find("reads 2 arguments, 1 given"),
              std::string::npos);
    EXPECT_NE(err("printf(\"%d\", 1, 2)").message().find("reads 1 argument, 2 given"), std::string::npos);
    EXPECT_NE(err("printf(\"%n\", &prev_pid)").message().find("'%n' writes to memory"), std::string::npos);
    EXPECT_NE(err("printf(\"%s\", arr)").message().find("argument 1 is a pointer"), std::string::npos);
    EXPECT_NE(err("printf(\"%*s\", prev_comm, prev_comm)").message().find("width needs an integer"),
              std::string::npos);
    EXPECT_NE(err("system(\"kill %s\", prev_pid)").message().find("system format: '%s' needs a string"),
              std::string::npos);
    // A format computed at run time cannot be checked: refused.
    e = err("printf(prev_comm)");
    EXPECT_NE(e.message().find("printf format must be a string literal"), std::string::npos);
    err("printf(prev_pid ? \"%d\" : \"%s\", prev_pid)");
    err("system(name)");
    // Casts make the intent explicit and pass.
    Fixture fx;
    compile("printf(\"%lx %p %p\", (long)prev_comm, prev_comm, arr)", fx.f);
}

TEST(Expr, PrintfFormatsEachConversion) {
    int64_t v = 0;
    EXPECT_EQ(printed("printf(\"%s[%d] %hhd %u \", prev_comm, prev_pid, sc, s16),"
                      "printf(\"%-*s| %.3s %c %%\\n\", 12, name, other, 'x')",
                      &v),
              "bash[42] -3 4294967291 java-thread | kwo x %\n");
    EXPECT_EQ(v, 22);  // the second printf: "java-thread | kwo x %\n"
    EXPECT_EQ(ev("system(\"exit %d\", 3) >> 8"), 3);
    EXPECT_EQ(ev("system(\"test %s = bash\", prev_comm)"), 0);
    EXPECT_EQ(ev("system(\"%4096d\", 1)"), -1);  // over the 4095 characters of a command
}
