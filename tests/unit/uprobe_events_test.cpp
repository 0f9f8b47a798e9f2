// tep/uprobe_events: parsing the lines of <tracefs>/uprobe_events (the writes are covered by
// tests/e2e/test_usdt.py against the kernel).
#include "tep/uprobe_events.h"

#include <gtest/gtest.h>

using namespace perfprof::tep;

TEST(UprobeEvents, ParsesKindGroupNameTargetArgs) {
    std::vector<UprobeEvent> ev = parse_uprobe_events(
        "p:ppapp/tick /bin/app:0x0000000000001139 arg1=%di:s64 arg2=%si:u64\n"
        "r:probe_libc/malloc /lib/libc.so.6:0x00000000000a0d40\n"
        "p:ppapp/sem /bin/app:0x000000000000117a(0x3018) arg1=%di:s64\n"
        "garbage\n"
        "\n");
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].kind, 'p');
    EXPECT_EQ(ev[0].group, "ppapp");
    EXPECT_EQ(ev[0].name, "tick");
    EXPECT_EQ(ev[0].target, "/bin/app:0x0000000000001139");
    EXPECT_EQ(ev[0].args, "arg1=%di:s64 arg2=%si:u64");
    EXPECT_EQ(ev[0].line, "p:ppapp/tick /bin/app:0x0000000000001139 arg1=%di:s64 arg2=%si:u64");
    EXPECT_EQ(ev[1].kind, 'r');
    EXPECT_EQ(ev[1].group, "probe_libc");
    EXPECT_EQ(ev[1].name, "malloc");
    EXPECT_EQ(ev[1].args, "");
    EXPECT_EQ(ev[2].target, "/bin/app:0x000000000000117a(0x3018)");
}

TEST(UprobeEvents, EmptyText) {
    EXPECT_TRUE(parse_uprobe_events("").empty());
}
