#include "event/event_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perf-prof/error.h"

using perfprof::Error;
using namespace perfprof::event;

namespace {

const std::vector<std::string> kProfilers = {"signal", "profile",     "task-state",
                                             "trace",  "page-faults", "bpf"};

template <typename F>
std::string usage_error(F f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error thrown";
    return {};
}

EventItem one(std::string_view text) {
    auto v = parse_event_list(text, kProfilers);
    EXPECT_EQ(v.size(), 1u);
    return v.at(0);
}

std::string parse_error(std::string_view text) {
    return usage_error([&] { parse_event_list(text, kProfilers); });
}

using Parts = std::vector<std::string>;

// ---- §2.1 protected scan ----

TEST(SplitProtected, PlainSplit) {
    EXPECT_EQ(split_protected("a,b,c", ','), (Parts{"a", "b", "c"}));
    EXPECT_EQ(split_protected("", ','), (Parts{""}));
    EXPECT_EQ(split_protected("a,", ','), (Parts{"a", ""}));
    EXPECT_EQ(split_protected("a//b/", '/'), (Parts{"a", "", "b", ""}));
}

TEST(SplitProtected, QuotesAreUnits) {
    EXPECT_EQ(split_protected(R"(comm~"x,y",b)", ','), (Parts{R"(comm~"x,y")", "b"}));
    EXPECT_EQ(split_protected("a='x/y'/b", '/'), (Parts{"a='x/y'", "b"}));
    // A quote of the other kind does not end the run.
    EXPECT_EQ(split_protected(R"("a',b",c)", ','), (Parts{R"("a',b")", "c"}));
}

TEST(SplitProtected, ParenthesesNestAndHonourQuotes) {
    EXPECT_EQ(split_protected("key=(a/b)/x", '/'), (Parts{"key=(a/b)", "x"}));
    EXPECT_EQ(split_protected("f=(a,(b,c),d),e", ','), (Parts{"f=(a,(b,c),d)", "e"}));
    // A ')' inside quotes does not close the parenthesis.
    EXPECT_EQ(split_protected(R"x(x=(g(")",1),y),z)x", ','), (Parts{R"x(x=(g(")",1),y))x", "z"}));
    // A stray ')' is ordinary text.
    EXPECT_EQ(split_protected("a),b", ','), (Parts{"a)", "b"}));
}

TEST(SplitProtected, UnterminatedRunProtectsTheRest) {
    EXPECT_EQ(split_protected("a,\"b,c", ','), (Parts{"a", "\"b,c"}));
    EXPECT_EQ(split_protected("a,(b,c", ','), (Parts{"a", "(b,c"}));
}

TEST(StripQuotes, Forms) {
    EXPECT_EQ(strip_quotes("\"abc\""), "abc");
    EXPECT_EQ(strip_quotes("'abc'"), "abc");
    EXPECT_EQ(strip_quotes("\"\""), "");
    EXPECT_EQ(strip_quotes("\"abc'"), "\"abc'");
    EXPECT_EQ(strip_quotes("\""), "\"");
    EXPECT_EQ(strip_quotes("abc"), "abc");
    EXPECT_EQ(strip_quotes("\"a\"b\""), "a\"b");
}

// ---- §2.2 grammar ----

TEST(ParseEvent, TracepointPlain) {
    EventItem e = one("sched:sched_wakeup");
    EXPECT_EQ(e.kind, Kind::Tracepoint);
    EXPECT_EQ(e.sys, "sched");
    EXPECT_EQ(e.name, "sched_wakeup");
    EXPECT_FALSE(e.has_filter);
    EXPECT_EQ(e.text, "sched:sched_wakeup");
    EXPECT_FALSE(e.profiler_candidate);
}

TEST(ParseEvent, TracepointWithFilter) {
    EventItem e = one("sched:sched_wakeup/pid>100/");
    EXPECT_TRUE(e.has_filter);
    EXPECT_EQ(e.filter, "pid>100");
    EXPECT_EQ(e.text, "sched:sched_wakeup/pid>100/");
}

TEST(ParseEvent, EmptyFilterAndQuotedParts) {
    EventItem e = one("kmem:kmalloc//ptr=ptr/size=bytes_alloc/stack/");
    EXPECT_TRUE(e.has_filter);
    EXPECT_EQ(e.filter, "");
    EXPECT_EQ(e.attrs.ptr, "ptr");
    EXPECT_EQ(e.attrs.size, "bytes_alloc");
    EXPECT_TRUE(e.attrs.stack);

    EventItem q = one(R"(sched:"sched_switch"/"prev_comm ~ 'a/b*'"/alias='x,y'/)");
    EXPECT_EQ(q.name, "sched_switch");
    EXPECT_EQ(q.filter, "prev_comm ~ 'a/b*'");
    EXPECT_EQ(q.attrs.alias, "x,y");
}

TEST(ParseEvent, ListOfSeveral) {
    auto v = parse_event_list(
        "sched:sched_switch/prev_state==0/key=prev_pid/alias=preempt/,sched:sched_wakeup,"
        "irq:x/(a,b)/",
        kProfilers);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].filter, "prev_state==0");
    EXPECT_EQ(v[0].attrs.key, "prev_pid");
    EXPECT_EQ(v[0].attrs.alias, "preempt");
    EXPECT_EQ(v[1].name, "sched_wakeup");
    EXPECT_EQ(v[2].filter, "(a,b)");
    EXPECT_EQ(v[2].text, "irq:x/(a,b)/");
}

TEST(ParseEvent, EmptyAttrIsIgnored) {
    EventItem e = one("a:b/f/stack//untraced///");
    EXPECT_TRUE(e.attrs.stack);
    EXPECT_TRUE(e.attrs.untraced);
}

TEST(ParseEvent, FilterMustBeTerminated) {
    std::string m = parse_error("sched:sched_wakeup/pid>100");
    EXPECT_EQ(m.rfind("Syntax error: ", 0), 0u) << m;
}

TEST(ParseEvent, TrailingTextWithoutSlash) {
    EXPECT_EQ(parse_error("sched:sched_wakeup/pid>1/stack"), "Syntax error: stack");
    EXPECT_EQ(parse_error("sched:sched_wakeup/pid>1/stack/alias=x"), "Syntax error: alias=x");
}

TEST(ParseEvent, UnquotedCpusListIsCutByItsComma) {
    EXPECT_EQ(parse_error("a:b//cpus=1,3/"),
              "Syntax error: cpus=1 (a comma ends an event: quote a cpus= list, cpus='0,2')");
    EXPECT_EQ(one("a:b//cpus='1,3'/").attrs.cpus, (std::vector<int>{1, 3}));
    // Another error beside a cpus= is left as it is.
    EXPECT_EQ(parse_error("a:b/x/cpus=1/stack,c:d"), "Syntax error: stack");
}

TEST(ParseEvent, UnknownAttr) {
    EXPECT_EQ(parse_error("a:b//bogus/"), "Syntax error: Unknown attr bogus");
    EXPECT_EQ(parse_error("a:b//Stack/"), "Syntax error: Unknown attr Stack");  // case-sensitive
    EXPECT_EQ(parse_error("a:b//delay=x/"), "Syntax error: Unknown attr delay");
    EXPECT_EQ(parse_error("a:b// stack/"), "Syntax error: Unknown attr  stack");
}

TEST(ParseEvent, EmptyPartsAreErrors) {
    EXPECT_EQ(parse_error("").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("a:b,").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error(":b").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("a:").rfind("Syntax error: ", 0), 0u);
}

// ---- probes ----

TEST(ParseEvent, Kprobes) {
    EventItem k = one("kprobe:do_sys_open/dfd==1/stack/");
    EXPECT_EQ(k.kind, Kind::Kprobe);
    EXPECT_EQ(k.sys, "kprobe");
    EXPECT_EQ(k.name, "do_sys_open");
    EXPECT_EQ(k.filter, "dfd==1");
    EventItem r = one("kretprobe:vfs_read");
    EXPECT_EQ(r.kind, Kind::Kretprobe);
    EXPECT_EQ(r.name, "vfs_read");
}

TEST(ParseEvent, UprobeQuotedPath) {
    EventItem u = one(R"(uprobe:malloc@"/lib64/libc.so.6")");
    EXPECT_EQ(u.kind, Kind::Uprobe);
    EXPECT_EQ(u.name, "malloc");
    EXPECT_EQ(u.path, "/lib64/libc.so.6");
    EXPECT_FALSE(u.has_filter);
}

TEST(ParseEvent, UprobeQuotedWhole) {
    EventItem u = one(R"(uretprobe:"malloc@/lib64/libc.so.6"/common_pid>0/stack/)");
    EXPECT_EQ(u.kind, Kind::Uretprobe);
    EXPECT_EQ(u.name, "malloc");
    EXPECT_EQ(u.path, "/lib64/libc.so.6");
    EXPECT_EQ(u.filter, "common_pid>0");
    EXPECT_TRUE(u.attrs.stack);
    EventItem s = one("uprobe:main@'./a.out'");
    EXPECT_EQ(s.path, "./a.out");
    EventItem plain = one("uprobe:main@a.out");
    EXPECT_EQ(plain.path, "a.out");
}

TEST(ParseEvent, UprobeNeedsFuncAtPath) {
    EXPECT_EQ(parse_error("uprobe:malloc").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("uprobe:@\"/x\"").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("uprobe:malloc@").rfind("Syntax error: ", 0), 0u);
    // An unquoted path with '/' splits the event, leaving an unterminated FILTER.
    EXPECT_EQ(parse_error("uprobe:malloc@/lib64/libc.so.6").rfind("Syntax error: ", 0), 0u);
}

// ---- nested profilers (§2.3 step 4, §2.8) ----

TEST(ParseEvent, NestedProfilerBare) {
    EventItem n = one("task-state");
    EXPECT_EQ(n.kind, Kind::Profiler);
    EXPECT_EQ(n.sys, "task-state");
    EXPECT_EQ(n.profiler_options, "");
}

TEST(ParseEvent, NestedProfilerOptionsAndAttrs) {
    EventItem n = one("profile/-F 500 -g/untraced/");
    EXPECT_EQ(n.kind, Kind::Profiler);
    EXPECT_EQ(n.sys, "profile");
    EXPECT_EQ(n.profiler_options, "-F 500 -g");
    EXPECT_TRUE(n.attrs.untraced);
    EventItem s = one("signal/-C 0/stack/max-stack=9/alias=sig/cpus=0-1/trigger/");
    EXPECT_EQ(s.profiler_options, "-C 0");
    EXPECT_EQ(s.attrs.max_stack, 9);
    EXPECT_EQ(s.attrs.alias, "sig");
    EXPECT_EQ(s.attrs.cpus, (std::vector<int>{0, 1}));
    EXPECT_TRUE(s.attrs.trigger);
    EventItem q = one("page-faults/'-N 10'/");
    EXPECT_EQ(q.profiler_options, "-N 10");
}

TEST(ParseEvent, NestedProfilerUnknown) {
    EXPECT_EQ(parse_error("nosuch"),
              "profiler nosuch not found; a tracepoint is SYS:NAME (see 'perf-prof list nosuch')");
    EXPECT_EQ(parse_error("nosuch/-g/"),
              "profiler nosuch not found; a tracepoint is SYS:NAME (see 'perf-prof list nosuch')");
    EXPECT_EQ(parse_error("profile/-g").rfind("Syntax error: ", 0), 0u);
}

TEST(ParseEvent, NestedProfilerRejectsFieldAttrs) {
    for (const char* a : {"key=pid", "ptr=p", "size=s", "role=1", "exec=printf(\"x\")", "printkey=key",
                          "num=x", "top-by=x", "top_add=x", "comm=x", "index=x"}) {
        std::string m = parse_error(std::string("profile//") + a + "/");
        EXPECT_NE(m.find("needs event fields"), std::string::npos) << a << ": " << m;
    }
}

TEST(ParseEvent, ProfilerNameAsSysIsACandidate) {
    // "signal" is both a tracepoint system and a profiler: only tracefs can decide (§2.3).
    EventItem t = one("signal:signal_generate/sig==9/");
    EXPECT_EQ(t.kind, Kind::Tracepoint);
    EXPECT_TRUE(t.profiler_candidate);
    EventItem b = one("bpf:kvm-exit/-x/stack/");
    EXPECT_TRUE(b.profiler_candidate);
    EXPECT_EQ(b.filter, "-x");
    check_nested_attrs(b);  // stack is fine
    EventItem k = one("bpf:kvm-exit//key=x/");
    EXPECT_NE(usage_error([&] { check_nested_attrs(k); }).find("needs event fields"), std::string::npos);
}

// ---- §2.5 attributes ----

TEST(Attrs, Defaults) {
    Attrs a = one("a:b").attrs;
    EXPECT_FALSE(a.stack);
    EXPECT_EQ(a.max_stack, 0);
    EXPECT_FALSE(a.cpus_given);
    EXPECT_FALSE(a.untraced);
    EXPECT_FALSE(a.trigger);
    EXPECT_TRUE(a.key.empty());
}

TEST(Attrs, EveryTextAttribute) {
    Attrs a = one("a:b//alias=A/exec=printf(\"%d/n\",x)/key=(pid*65536+prio)/printkey=printf(\"%#lx\",key)/"
                  "role=(next_pid?1:0)|(prev_pid?2:0)/ptr=p/size=(4096<<order)/num=n/top-by=tb/top-add=ta/"
                  "comm=comm_get(_pid)/index=idx/")
                  .attrs;
    EXPECT_EQ(a.alias, "A");
    EXPECT_EQ(a.exec, "printf(\"%d/n\",x)");
    EXPECT_EQ(a.key, "(pid*65536+prio)");
    EXPECT_EQ(a.printkey, "printf(\"%#lx\",key)");
    EXPECT_EQ(a.role, "(next_pid?1:0)|(prev_pid?2:0)");
    EXPECT_EQ(a.ptr, "p");
    EXPECT_EQ(a.size, "(4096<<order)");
    EXPECT_EQ(a.num, "n");
    EXPECT_EQ(a.top_by, "tb");
    EXPECT_EQ(a.top_add, "ta");
    EXPECT_EQ(a.comm, "comm_get(_pid)");
    EXPECT_EQ(a.index, "idx");
}

TEST(Attrs, UnderscoreSpellings) {
    Attrs a = one("a:b//top_by=x/top_add=y/").attrs;
    EXPECT_EQ(a.top_by, "x");
    EXPECT_EQ(a.top_add, "y");
}

TEST(Attrs, ValuesAreQuoteStripped) {
    Attrs a = one("a:b//alias=\"my alias\"/key='pid'/").attrs;
    EXPECT_EQ(a.alias, "my alias");
    EXPECT_EQ(a.key, "pid");
}

TEST(Attrs, MaxStack) {
    Attrs a = one("a:b//max-stack=10/").attrs;
    EXPECT_TRUE(a.stack);
    EXPECT_EQ(a.max_stack, 10);
    EXPECT_EQ(one("a:b//max-stack=1000/").attrs.max_stack, 127);
    EXPECT_EQ(one("a:b//max-stack=0x10/").attrs.max_stack, 16);
    EXPECT_EQ(parse_error("a:b//max-stack=abc/"), "option `max-stack' expects a numerical value");
    EXPECT_EQ(parse_error("a:b//max-stack=/").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("a:b//max-stack/").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("a:b//max-stack=-1/").rfind("Syntax error: ", 0), 0u);
}

TEST(Attrs, Cpus) {
    Attrs a = one("a:b//cpus=0-2/").attrs;
    EXPECT_TRUE(a.cpus_given);
    EXPECT_EQ(a.cpus, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(one("a:b//cpus='0-2,5'/").attrs.cpus, (std::vector<int>{0, 1, 2, 5}));
    // An unquoted ',' ends the EVENT (§2.1), leaving "cpus=0-2" without its '/': said so.
    EXPECT_EQ(parse_error("a:b//cpus=0-2,5/"),
              "Syntax error: cpus=0-2 (a comma ends an event: quote a cpus= list, cpus='0,2')");
    EXPECT_EQ(one("a:b//cpus=\"1,3\"/").attrs.cpus, (std::vector<int>{1, 3}));
    parse_error("a:b//cpus=x/");
    parse_error("a:b//cpus=/");
}

TEST(Attrs, FlagsTakeNoValue) {
    Attrs a = one("a:b//untraced/trigger/").attrs;
    EXPECT_TRUE(a.untraced);
    EXPECT_TRUE(a.trigger);
    EXPECT_EQ(parse_error("a:b//stack=1/").rfind("Syntax error: ", 0), 0u);
    EXPECT_EQ(parse_error("a:b//untraced=1/").rfind("Syntax error: ", 0), 0u);
}

TEST(Attrs, TextAttrsNeedValue) {
    for (const char* a : {"alias", "exec", "key", "printkey", "role", "ptr", "size", "num", "top-by",
                          "top-add", "comm", "index"}) {
        EXPECT_EQ(parse_error(std::string("a:b//") + a + "/"),
                  std::string("Syntax error: attr ") + a + " needs a value");
        EXPECT_EQ(parse_error(std::string("a:b//") + a + "=/"),
                  std::string("Syntax error: attr ") + a + " needs a value");
        EXPECT_EQ(parse_error(std::string("a:b//") + a + "=''/"),
                  std::string("Syntax error: attr ") + a + " needs a value");
    }
}

TEST(Attrs, PropagationRejected) {
    for (const char* a : {"vm=1234", "push=:9000", "pull=host:9000"}) {
        std::string m = parse_error(std::string("a:b//") + a + "/");
        EXPECT_NE(m.find("not supported"), std::string::npos) << m;
    }
}

TEST(Attrs, LastOccurrenceWins) {
    EXPECT_EQ(one("a:b//alias=x/alias=y/").attrs.alias, "y");
}

// ---- §2.4 wildcards ----

const std::vector<std::string> kTps = {"irq:irq_handler_entry", "irq:softirq_entry",  "irq:softirq_exit",
                                       "irq:softirq_raise",     "sched:sched_switch", "sched:sched_wakeup",
                                       "sched:sched_wakeup_new"};

TEST(IsGlob, Chars) {
    EXPECT_TRUE(is_glob("irq:*"));
    EXPECT_TRUE(is_glob("a:b?"));
    EXPECT_TRUE(is_glob("a:[ab]"));
    EXPECT_FALSE(is_glob("sched:sched_switch"));
}

TEST(Wildcards, SpecExample) {
    EXPECT_EQ(expand_wildcards("irq:softirq_*/vec==3/", kTps),
              "irq:softirq_entry/vec==3/,irq:softirq_exit/vec==3/,irq:softirq_raise/vec==3/");
}

TEST(Wildcards, NoGlobUnchanged) {
    EXPECT_EQ(expand_wildcards("sched:sched_switch//key=(a,b)/,profile/-g/,kprobe:x", kTps),
              "sched:sched_switch//key=(a,b)/,profile/-g/,kprobe:x");
}

TEST(Wildcards, QuestionMarkAndBracket) {
    EXPECT_EQ(expand_wildcards("sched:sched_wakeu?", kTps), "sched:sched_wakeup");
    EXPECT_EQ(expand_wildcards("irq:softirq_[er]*//stack/", kTps),
              "irq:softirq_entry//stack/,irq:softirq_exit//stack/,irq:softirq_raise//stack/");
    EXPECT_EQ(expand_wildcards("*:*_new", kTps), "sched:sched_wakeup_new");
}

TEST(Wildcards, MixedListKeepsOrder) {
    EXPECT_EQ(expand_wildcards("sched:sched_switch,irq:softirq_e*,sched:sched_wakeup*/pid>1/", kTps),
              "sched:sched_switch,irq:softirq_entry,irq:softirq_exit,"
              "sched:sched_wakeup/pid>1/,sched:sched_wakeup_new/pid>1/");
}

TEST(Wildcards, NoMatch) {
    EXPECT_EQ(usage_error([] { expand_wildcards("sched:nope*/x/", kTps); }),
              "No events matching pattern 'sched:nope*'");
    EXPECT_EQ(usage_error([] { expand_wildcards("a:b,x:[q]", kTps); }), "No events matching pattern 'x:[q]'");
}

TEST(Wildcards, ExpandedTextParses) {
    auto v = parse_event_list(expand_wildcards("irq:softirq_*/vec==3/stack/", kTps), kProfilers);
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[2].name, "softirq_raise");
    EXPECT_EQ(v[2].filter, "vec==3");
    EXPECT_TRUE(v[2].attrs.stack);
}

}  // namespace

// Found by tests/fuzz/event_spec_fuzz: a leading empty EVENT was dropped when a glob followed.
TEST(Wildcards, LeadingEmptyEventIsAnError) {
    EXPECT_EQ(expand_wildcards(",sched:sched_switc*", kTps), ",sched:sched_switch");
    EXPECT_EQ(
        usage_error([] { parse_event_list(expand_wildcards(",sched:sched_switc*", kTps), kProfilers); }),
        usage_error([] { parse_event_list(",sched:sched_switch", kProfilers); }));
}
