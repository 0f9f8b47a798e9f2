// lib/core/text: nearest() for "did you mean".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/text.h"

using perfprof::core::nearest;

TEST(Nearest, OneOrTwoEditsAway) {
    const std::vector<std::string> names{"signal", "profile", "trace", "task-state", "list"};
    EXPECT_EQ(nearest("proflie", names), "profile");  // a transposition: two edits
    EXPECT_EQ(nearest("profil", names), "profile");
    EXPECT_EQ(nearest("lst", names), "list");
    EXPECT_EQ(nearest("task_state", names), "task-state");
    EXPECT_EQ(nearest("tracee", names), "trace");
}

TEST(Nearest, NothingNearEnough) {
    const std::vector<std::string> names{"signal", "profile", "trace", "list"};
    EXPECT_EQ(nearest("xyz", names), "");
    EXPECT_EQ(nearest("trac3xx", names), "");  // three edits
    EXPECT_EQ(nearest("ls", names), "");       // two edits are not fewer than half of two letters
    EXPECT_EQ(nearest("", names), "");
    EXPECT_EQ(nearest("trace", names), "");  // itself is no suggestion
    EXPECT_EQ(nearest("anything", {}), "");
}

TEST(Nearest, TheNearestWins) {
    EXPECT_EQ(
        nearest("sched:sched_swich", {"sched:sched_switch", "sched:sched_wakeup", "sched:sched_stat_wait"}),
        "sched:sched_switch");
    EXPECT_EQ(nearest("abcd", {"abxy", "abcx"}), "abcx");
    EXPECT_EQ(nearest("abcd", {"abcx", "abcy"}), "abcx");  // the first of equally near ones
}
