#include "tep/lat.h"

#include <gtest/gtest.h>

using perfprof::tep::lat_flags;

TEST(LatFlags, AllClear) {
    EXPECT_EQ(lat_flags(0, 0), "....");
}

TEST(LatFlags, IrqBhColumn) {
    EXPECT_EQ(lat_flags(0x01, 0), "d...");
    EXPECT_EQ(lat_flags(0x80, 0), "b...");
    EXPECT_EQ(lat_flags(0x81, 0), "D...");
}

TEST(LatFlags, NeedReschedAllEightCombinations) {
    // NEED_RESCHED 0x04, NEED_RESCHED_LAZY 0x02, PREEMPT_RESCHED 0x20.
    EXPECT_EQ(lat_flags(0x00, 0)[1], '.');
    EXPECT_EQ(lat_flags(0x04, 0)[1], 'n');
    EXPECT_EQ(lat_flags(0x02, 0)[1], 'l');
    EXPECT_EQ(lat_flags(0x20, 0)[1], 'p');
    EXPECT_EQ(lat_flags(0x04 | 0x02, 0)[1], 'b');
    EXPECT_EQ(lat_flags(0x04 | 0x20, 0)[1], 'N');
    EXPECT_EQ(lat_flags(0x02 | 0x20, 0)[1], 'L');
    EXPECT_EQ(lat_flags(0x04 | 0x02 | 0x20, 0)[1], 'B');
}

TEST(LatFlags, ContextColumnAllEightCombinations) {
    // NMI 0x40, HARDIRQ 0x08, SOFTIRQ 0x10.
    EXPECT_EQ(lat_flags(0x00, 0)[2], '.');
    EXPECT_EQ(lat_flags(0x10, 0)[2], 's');
    EXPECT_EQ(lat_flags(0x08, 0)[2], 'h');
    EXPECT_EQ(lat_flags(0x08 | 0x10, 0)[2], 'H');
    EXPECT_EQ(lat_flags(0x40, 0)[2], 'z');
    EXPECT_EQ(lat_flags(0x40 | 0x10, 0)[2], 'z');
    EXPECT_EQ(lat_flags(0x40 | 0x08, 0)[2], 'Z');
    EXPECT_EQ(lat_flags(0x40 | 0x08 | 0x10, 0)[2], 'Z');
}

TEST(LatFlags, PreemptCount) {
    EXPECT_EQ(lat_flags(0, 0), "....");
    EXPECT_EQ(lat_flags(0, 1), "...1");
    EXPECT_EQ(lat_flags(0, 5), "...5");
    EXPECT_EQ(lat_flags(0, 0xa), "...a");
    EXPECT_EQ(lat_flags(0, 0xf), "...f");
    // Low nibble first, then the high nibble when it is non-zero.
    EXPECT_EQ(lat_flags(0, 0x10), "...01");
    EXPECT_EQ(lat_flags(0, 0x21), "...12");
    EXPECT_EQ(lat_flags(0, 0xab), "...ba");
    EXPECT_EQ(lat_flags(0, 0xff), "...ff");
}

TEST(LatFlags, PreemptCountOnlyLowByteExists) {
    EXPECT_EQ(lat_flags(0, 0x100), "....");
    EXPECT_EQ(lat_flags(0, 0x305), "...5");
}

TEST(LatFlags, Lengths) {
    for (unsigned pc = 0; pc < 256; ++pc) EXPECT_EQ(lat_flags(0xff, pc).size(), pc > 15 ? 5u : 4u) << pc;
}

TEST(LatFlags, Combined) {
    EXPECT_EQ(lat_flags(0x01 | 0x04 | 0x08, 1), "dnh1");
    EXPECT_EQ(lat_flags(0xff, 0xff), "DBZff");
    EXPECT_EQ(lat_flags(0x80 | 0x20 | 0x10, 2), "bps2");
    EXPECT_EQ(lat_flags(0x81 | 0x06 | 0x18, 0x12), "DbH21");
}

TEST(LatFlags, UnknownBitsIgnored) {
    EXPECT_EQ(lat_flags(0xffffff00u, 0), "....");
}
