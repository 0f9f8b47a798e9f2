// syscall_name(): the generated x86_64 table.
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <cstdint>

#include "filter/syscall_names.h"

using perfprof::filter::syscall_name;

TEST(SyscallNames, KnownNumbers) {
    ASSERT_NE(syscall_name(0), nullptr);
    EXPECT_STREQ(syscall_name(0), "read");
    EXPECT_STREQ(syscall_name(1), "write");
    EXPECT_STREQ(syscall_name(39), "getpid");
    EXPECT_STREQ(syscall_name(59), "execve");
    EXPECT_STREQ(syscall_name(231), "exit_group");
}

TEST(SyscallNames, AgreesWithTheLibcNumbers) {
    EXPECT_STREQ(syscall_name(SYS_openat), "openat");
    EXPECT_STREQ(syscall_name(SYS_clone), "clone");
    EXPECT_STREQ(syscall_name(SYS_perf_event_open), "perf_event_open");
}

TEST(SyscallNames, UnknownNumbersAreNull) {
    EXPECT_EQ(syscall_name(-1), nullptr);
    EXPECT_EQ(syscall_name(100000), nullptr);
    EXPECT_EQ(syscall_name(INT64_MIN), nullptr);
    EXPECT_EQ(syscall_name(INT64_MAX), nullptr);
    // Holes in the numbering (e.g. between the last legacy call and 424, pidfd_send_signal).
    EXPECT_EQ(syscall_name(400), nullptr);
    EXPECT_STREQ(syscall_name(424), "pidfd_send_signal");
}
