// lib/core/text: nearest() for "did you mean"; status_value / status_field of /proc/PID/status.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/text.h"

using perfprof::core::nearest;
using perfprof::core::status_field;
using perfprof::core::status_value;

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

TEST(StatusValue, WholeLinesOnly) {
    const std::string text =
        "Name:\tTgid: fake\nUmask:\t0022\nTgid:\t4242\nNgid:\t0\nPid:\t4243\n"
        "Uid:\t0\t1000\t0\t1000\nNSpid:\t4243\t7\nSeccomp:\t2\nSeccomp_filters:\t1\n";
    EXPECT_EQ(status_value(text, "Tgid:"), "4242");  // not the "Tgid:" inside the name
    EXPECT_EQ(status_value(text, "Name:"), "Tgid: fake");
    EXPECT_EQ(status_value(text, "Uid:"), "0\t1000\t0\t1000");
    EXPECT_EQ(status_value(text, "NSpid:"), "4243\t7");
    EXPECT_EQ(status_value(text, "Seccomp:"), "2");
    EXPECT_EQ(status_value(text, "TracerPid:"), "");
    EXPECT_EQ(status_value("", "Pid:"), "");
    EXPECT_EQ(status_value("Pid:", "Pid:"), "");  // no value, no newline
}

TEST(StatusField, ReadsThisProcess) {
    EXPECT_EQ(status_field("/proc/self/status", "Tgid:"), std::to_string(::getpid()));
    EXPECT_EQ(status_field("/proc/self/no-such-file", "Tgid:"), "");
}
