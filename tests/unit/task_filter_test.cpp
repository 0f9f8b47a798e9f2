#include "filter/task_filter.h"

#include <gtest/gtest.h>

#include <string>

#include "perf-prof/error.h"

using perfprof::Error;
using perfprof::filter::comm_filter;
using perfprof::filter::pid_filter;

namespace {

std::string usage_error(std::string_view patterns) {
    try {
        comm_filter(patterns);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error for '" << patterns << "'";
    return {};
}

}  // namespace

TEST(CommFilter, PlainName) {
    EXPECT_EQ(comm_filter("bash"), R"(comm=="bash")");
}
TEST(CommFilter, Globs) {
    EXPECT_EQ(comm_filter("ssh*"), R"(comm~"ssh*")");
    EXPECT_EQ(comm_filter("a?c"), R"(comm~"a?c")");
    EXPECT_EQ(comm_filter("kworker[0-9]"), R"(comm~"kworker[0-9]")");
}
TEST(CommFilter, ListJoinedWithOr) {
    EXPECT_EQ(comm_filter("bash,ssh*"), R"(comm=="bash"||comm~"ssh*")");
    EXPECT_EQ(comm_filter("a,b,c*"), R"(comm=="a"||comm=="b"||comm~"c*")");
}
TEST(CommFilter, OtherField) {
    EXPECT_EQ(comm_filter("bash,ssh*", "prev_comm"), R"(prev_comm=="bash"||prev_comm~"ssh*")");
    EXPECT_EQ(comm_filter("x", "next_comm"), R"(next_comm=="x")");
}
TEST(CommFilter, NameCharactersKept) {
    EXPECT_EQ(comm_filter("kworker/0:1H"), R"(comm=="kworker/0:1H")");
    EXPECT_EQ(comm_filter("my prog"), R"(comm=="my prog")");
    EXPECT_EQ(comm_filter("]"), R"(comm=="]")");
}
TEST(CommFilter, FifteenCharsAccepted) {
    EXPECT_EQ(comm_filter("123456789012345"), R"(comm=="123456789012345")");
}

TEST(CommFilter, EmptyItems) {
    EXPECT_EQ(usage_error(""), "invalid --filter pattern '': empty name");
    EXPECT_EQ(usage_error(","), "invalid --filter pattern ',': empty name");
    EXPECT_EQ(usage_error("a,"), "invalid --filter pattern 'a,': empty name");
    EXPECT_EQ(usage_error(",a"), "invalid --filter pattern ',a': empty name");
    EXPECT_EQ(usage_error("a,,b"), "invalid --filter pattern 'a,,b': empty name");
}
TEST(CommFilter, TooLong) {
    EXPECT_EQ(usage_error("bash,1234567890123456"),
              "invalid --filter pattern '1234567890123456': longer than 15 characters");
}
TEST(CommFilter, QuoteAndBackslash) {
    EXPECT_EQ(usage_error(R"(a"b)"), R"(invalid --filter pattern 'a"b': must not contain '"' or '\')");
    EXPECT_EQ(usage_error(R"(ok,a\b)"), R"(invalid --filter pattern 'a\b': must not contain '"' or '\')");
}

// The kernel's end-only match compares the end of the 16-byte field, so a leading-star-only
// glob is rewritten to take the full glob path; every other pattern passes through unchanged.
TEST(CommFilter, LeadingStarOnlyGlobTakesTheKernelGlobPath) {
    EXPECT_EQ(comm_filter("*self"), R"(comm~"*[s]elf")");
    EXPECT_EQ(comm_filter("**f"), R"(comm~"**[f]")");
    EXPECT_EQ(comm_filter("*sel*"), R"(comm~"*sel*")");
    EXPECT_EQ(comm_filter("*s?lf"), R"(comm~"*s?lf")");
    EXPECT_EQ(comm_filter("*"), R"(comm~"*")");
}

TEST(PidFilter, RunsBecomeRanges) {
    EXPECT_EQ(pid_filter({}), "");
    EXPECT_EQ(pid_filter({42}), "pid==42");
    EXPECT_EQ(pid_filter({3, 4, 5, 9}, "prev_pid"), "(prev_pid>=3&&prev_pid<=5)||prev_pid==9");
    EXPECT_EQ(pid_filter({1, 3, 4}, "next_pid"), "next_pid==1||(next_pid>=3&&next_pid<=4)");
}
