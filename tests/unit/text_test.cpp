// lib/core/text: nearest() for "did you mean"; status_value / status_field of /proc/PID/status;
// utf8_length; is_shared_object; parse_hex and parse_dec.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/text.h"

using perfprof::core::is_shared_object;
using perfprof::core::nearest;
using perfprof::core::parse_dec;
using perfprof::core::parse_hex;
using perfprof::core::status_field;
using perfprof::core::status_value;
using perfprof::core::utf8_length;

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

TEST(Utf8Length, ValidSequencesOnly) {
    EXPECT_EQ(utf8_length(""), 0u);
    EXPECT_EQ(utf8_length("a\xff"), 1u);
    EXPECT_EQ(utf8_length("\xc3\xa9x"), 2u);
    EXPECT_EQ(utf8_length("\xe6\xbc\xa2"), 3u);
    EXPECT_EQ(utf8_length("\xf0\x9f\x98\x80"), 4u);
    EXPECT_EQ(utf8_length("\xc3"), 0u);              // cut short
    EXPECT_EQ(utf8_length("\xc0\xaf"), 0u);          // overlong
    EXPECT_EQ(utf8_length("\xe0\x80\xaf"), 0u);      // overlong
    EXPECT_EQ(utf8_length("\xed\xa0\x80"), 0u);      // a UTF-16 surrogate
    EXPECT_EQ(utf8_length("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
    EXPECT_EQ(utf8_length("\xf5\x80\x80\x80"), 0u);  // no such lead byte
    EXPECT_EQ(utf8_length("\x80"), 0u);              // a continuation byte alone
}

TEST(SharedObject, ByFileName) {
    EXPECT_TRUE(is_shared_object("/usr/lib/x86_64-linux-gnu/libc.so.6"));
    EXPECT_TRUE(is_shared_object("/lib64/ld-linux-x86-64.so.2"));
    EXPECT_TRUE(is_shared_object("libfoo.so"));
    EXPECT_FALSE(is_shared_object("/usr/bin/python3"));
    EXPECT_FALSE(is_shared_object("/srv/server.sock"));
    EXPECT_FALSE(is_shared_object("/opt/lib.so.d/app"));  // the directory's name does not count
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

TEST(ParseDec, DigitsOnlyUpTo64Bits) {
    uint64_t v = 7;
    EXPECT_TRUE(parse_dec("0", v));
    EXPECT_EQ(v, 0u);
    EXPECT_TRUE(parse_dec("65535", v));
    EXPECT_EQ(v, 65535u);
    EXPECT_TRUE(parse_dec("18446744073709551615", v));  // 2^64-1, 20 digits (an inode can be)
    EXPECT_EQ(v, UINT64_MAX);
    for (const char* bad : {"", "18446744073709551616", "99999999999999999999", "000000000000000000001", "-1",
                            "+1", " 1", "1 ", "1x", "0x10"})
        EXPECT_FALSE(parse_dec(bad, v)) << '"' << bad << '"';
}

TEST(ParseHex, HexDigitsOnlyUpTo16) {
    uint64_t v = 0;
    EXPECT_TRUE(parse_hex("ffffFFFFffffFFFF", v));
    EXPECT_EQ(v, UINT64_MAX);
    EXPECT_TRUE(parse_hex("7f0a", v));
    EXPECT_EQ(v, 0x7f0au);
    for (const char* bad : {"", "0x10", "10000000000000000", "g", "-1"})
        EXPECT_FALSE(parse_hex(bad, v)) << '"' << bad << '"';
}
