// lib/hw: the register block, EVTS-T, breakpoint address words, event-care's checker and
// watchdog's lockup predictor, fed synthetic values (SPEC-PROFILERS §P8, §P12, §P14, §P20).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/breakpoint_addr.h"
#include "hw/event_care.h"
#include "hw/hw_print.h"
#include "hw/watchdog.h"
#include "perf-prof/error.h"

namespace perfprof::hw {
namespace {

// Values as the kernel lays them out for kX86GeneralRegs: one per mask bit, lowest first;
// register r holds 0x1000 + r.
std::vector<uint64_t> general_values() {
    std::vector<uint64_t> v;
    for (int r = 0; r < kX86RegCount; r++)
        if (kX86GeneralRegs & (uint64_t(1) << r)) v.push_back(0x1000 + uint64_t(r));
    return v;
}

TEST(HwRegs, GeneralMaskLeavesOutTheDataSegments) {
    EXPECT_EQ(kX86GeneralRegs, 0xff0fffull);
    EXPECT_EQ(general_values().size(), 20u);
}

TEST(HwRegs, ValueByKernelOrder) {
    const std::vector<uint64_t> v = general_values();
    uint64_t x = 0;
    ASSERT_TRUE(reg_value(kX86GeneralRegs, v.data(), kIP, x));
    EXPECT_EQ(x, 0x1000u + kIP);
    ASSERT_TRUE(reg_value(kX86GeneralRegs, v.data(), kR8, x));  // after the 4 segment gaps
    EXPECT_EQ(x, 0x1000u + kR8);
    ASSERT_TRUE(reg_value(kX86GeneralRegs, v.data(), kR15, x));
    EXPECT_EQ(x, 0x1000u + kR15);
    EXPECT_FALSE(reg_value(kX86GeneralRegs, v.data(), kDS, x));
    EXPECT_EQ(x, 0u);
    EXPECT_FALSE(reg_value(kX86GeneralRegs, nullptr, kAX, x));
}

TEST(HwRegs, BlockLayout) {
    const std::vector<uint64_t> v = general_values();
    std::string out;
    append_regs_block(kX86GeneralRegs, v.data(), out);
    EXPECT_EQ(out,
              "      RIP: 0000000000001008 RSP: 0000000000001007 RFLAGS:00001009\n"
              "      RAX: 0000000000001000 RBX: 0000000000001001 RCX: 0000000000001002\n"
              "      RDX: 0000000000001003 RSI: 0000000000001004 RDI: 0000000000001005\n"
              "      RBP: 0000000000001006 R08: 0000000000001010 R09: 0000000000001011\n"
              "      R10: 0000000000001012 R11: 0000000000001013 R12: 0000000000001014\n"
              "      R13: 0000000000001015 R14: 0000000000001016 R15: 0000000000001017\n"
              "      CS: 100a SS: 100b\n");
    std::string none;
    append_regs_block(kX86GeneralRegs, nullptr, none);
    EXPECT_EQ(none, "");
}

TEST(HwRegs, PartialMaskPrintsZeros) {
    const uint64_t ip_only[] = {0xabc};
    std::string out;
    append_regs_block(uint64_t(1) << kIP, ip_only, out);
    EXPECT_EQ(out.substr(0, 35), "      RIP: 0000000000000abc RSP: 00");
    EXPECT_NE(out.find("RAX: 0000000000000000"), std::string::npos);
}

TEST(HwEvtsT, TruncatesWhereEvtsRounds) {
    std::string s;
    append_evts_t(1'234'567'999ull, s);
    EXPECT_EQ(s, "1.234567");
    s.clear();
    append_evts_t(999'999'999ull, s);
    EXPECT_EQ(s, "0.999999");
    s.clear();
    append_evts_t(5'000'000'000ull, s);
    EXPECT_EQ(s, "5.000000");
}

TEST(HwAddr, KernelAddresses) {
    EXPECT_TRUE(kernel_address(0xffffffff81000000ull));
    EXPECT_TRUE(kernel_address(0xffff000000000000ull));
    EXPECT_FALSE(kernel_address(0x00007fffffffe000ull));
}

// ------------------------------------------------------------------ breakpoint words

std::string usage_message(const std::vector<std::string>& words) {
    try {
        parse_breakpoints(words);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        return e.what();
    }
    ADD_FAILURE() << "no error for " << (words.empty() ? "" : words[0]);
    return {};
}

TEST(HwBreakpoint, Defaults) {
    const Breakpoint b = parse_breakpoint("0x1000");
    EXPECT_EQ(b.addr, 0x1000u);
    EXPECT_EQ(b.len, 1u);
    EXPECT_EQ(b.type, 2u);
    EXPECT_EQ(type_letters(b.type), "W");
}

TEST(HwBreakpoint, DecimalLengthAndType) {
    const Breakpoint b = parse_breakpoint("4096/4:w");
    EXPECT_EQ(b.addr, 4096u);
    EXPECT_EQ(b.len, 4u);
    EXPECT_EQ(type_letters(b.type), "W");
    const Breakpoint h = parse_breakpoint("0XFFFFffff81000000/8");
    EXPECT_EQ(h.addr, 0xffffffff81000000ull);
    EXPECT_EQ(h.len, 8u);
}

TEST(HwBreakpoint, ReadImpliesWrite) {
    const Breakpoint b = parse_breakpoint("0x10/2:r");
    EXPECT_EQ(b.type, 3u);
    EXPECT_EQ(type_letters(b.type), "RW");
    EXPECT_EQ(b.len, 2u);
    EXPECT_EQ(type_letters(parse_breakpoint("0x10:rw").type), "RW");
}

TEST(HwBreakpoint, ExecuteIsExecuteOnlyOfALong) {
    const Breakpoint b = parse_breakpoint("0xffffffff81000000/1:xw");
    EXPECT_EQ(b.type, 4u);
    EXPECT_EQ(b.len, sizeof(long));
    EXPECT_EQ(type_letters(b.type), "X");
}

TEST(HwBreakpoint, BadWords) {
    EXPECT_NE(usage_message({"abc"}).find(" <addr> is not decimal or hexadecimal."), std::string::npos);
    EXPECT_NE(usage_message({"0"}).find(" <addr> is not decimal or hexadecimal."), std::string::npos);
    EXPECT_NE(usage_message({"0x"}).find(" <addr> is not decimal or hexadecimal."), std::string::npos);
    EXPECT_NE(usage_message({"-5"}).find(" <addr> is not decimal or hexadecimal."), std::string::npos);
    EXPECT_NE(usage_message({"0x10zz"}).find(" <addr> parsing error."), std::string::npos);
    EXPECT_NE(usage_message({"0x10/3"}).find(" <addr> parsing error"), std::string::npos);
    EXPECT_NE(usage_message({"0x10:q"}).find(" <addr> parsing error"), std::string::npos);
    EXPECT_NE(usage_message({"0x10:"}).find(" <addr> parsing error"), std::string::npos);
    EXPECT_NE(usage_message({"0x10/4:w "}).find(" <addr> parsing error."), std::string::npos);
    EXPECT_NE(usage_message({"0x10000000000000000"}).find(" <addr> parsing error."), std::string::npos);
    EXPECT_NE(usage_message({"99999999999999999999"}).find(" <addr> parsing error."), std::string::npos);
    // The word itself is named.
    EXPECT_NE(usage_message({"abc"}).find("'abc'"), std::string::npos);
}

TEST(HwBreakpoint, CountOfWords) {
    EXPECT_NE(usage_message({}).find(" <addr> needs to be specified."), std::string::npos);
    EXPECT_NE(usage_message({"1", "2", "3", "4", "5"}).find(" Up to 4 breakpoints are supported."),
              std::string::npos);
    EXPECT_EQ(parse_breakpoints({"1", "2", "3", "4"}).size(), 4u);
}

// ------------------------------------------------------------------ event-care

TEST(HwEventCare, SilentOnAContinuousStream) {
    EventCareChecker c;
    for (uint64_t n = 1; n <= 100; n++) {
        const auto v = c.check(0, int(n % 2), n / 2 + 1, 1, n * 10);
        EXPECT_FALSE(v.lost) << n;
        EXPECT_FALSE(v.out_of_order) << n;
    }
    EXPECT_EQ(c.losses(), 0u);
    EXPECT_EQ(c.disorders(), 0u);
}

TEST(HwEventCare, CountJumpIsALoss) {
    EventCareChecker c;
    EXPECT_FALSE(c.check(0, 0, 10, 1, 100).lost);  // the first count only sets the base
    const auto v = c.check(0, 0, 15, 1, 200);
    EXPECT_TRUE(v.lost);
    EXPECT_EQ(v.lost_events, 4u);  // count - prev - 1
    EXPECT_FALSE(c.check(0, 0, 16, 1, 300).lost);
    // Another event and another instance count apart.
    EXPECT_FALSE(c.check(1, 0, 1, 1, 400).lost);
    EXPECT_FALSE(c.check(0, 1, 99, 1, 400).lost);
    EXPECT_EQ(c.losses(), 1u);
}

TEST(HwEventCare, PeriodIsTheExpectedStep) {
    EventCareChecker c;
    c.check(0, 0, 100, 100, 1);
    EXPECT_FALSE(c.check(0, 0, 200, 100, 2).lost);
    EXPECT_TRUE(c.check(0, 0, 400, 100, 3).lost);
}

TEST(HwEventCare, EarlierTimeOnTheSameInstanceIsOutOfOrder) {
    EventCareChecker c;
    c.check(0, 0, 1, 1, 500);
    const auto v = c.check(1, 0, 1, 1, 400);
    EXPECT_TRUE(v.out_of_order);
    EXPECT_EQ(v.latest, 500u);
    EXPECT_EQ(v.latest_sample, nullptr);
    // The out-of-order sample did not become the latest.
    EXPECT_TRUE(c.check(0, 0, 2, 1, 450).out_of_order);
    EXPECT_FALSE(c.check(0, 0, 3, 1, 500).out_of_order);  // equal times are in order
    // Another instance has its own latest.
    EXPECT_FALSE(c.check(0, 1, 1, 1, 10).out_of_order);
    EXPECT_EQ(c.disorders(), 2u);
}

TEST(HwEventCare, KeepsTheLatestSampleForStacks) {
    EventCareChecker c(true);
    const uint64_t chain[] = {0xffffffff81000010ull};
    Sample a;
    a.tid = 7;
    a.time = 900;
    a.callchain = chain;
    a.callchain_nr = 1;
    c.check(0, 0, 1, 1, a.time, &a);
    Sample b;
    b.tid = 8;
    b.time = 800;
    const auto v = c.check(0, 0, 2, 1, b.time, &b);
    ASSERT_TRUE(v.out_of_order);
    ASSERT_NE(v.latest_sample, nullptr);
    EXPECT_EQ(v.latest_sample->tid, 7u);
    EXPECT_EQ(v.latest_sample->chain.size(), 1u);
}

// ------------------------------------------------------------------ watchdog

constexpr uint64_t kUnit = uint64_t(1) << 30;  // watchdog_touch_ts's "second"

TEST(HwWatchdog, Thresh) {
    EXPECT_EQ(parse_watchdog_thresh("10\n"), 10u);
    EXPECT_THROW(parse_watchdog_thresh(""), Error);
    EXPECT_THROW(parse_watchdog_thresh("x1"), Error);
    const LockupPredictor p(10, 0);
    EXPECT_EQ(p.soft_thresh(), 4u);
    EXPECT_EQ(p.hard_thresh(), 4'200'000'000ull);
}

TEST(HwWatchdog, DiscoveryCompletesWithEveryCpu) {
    WatchdogDiscovery d({1, 0, 3});
    EXPECT_FALSE(d.complete());
    EXPECT_TRUE(d.found(0, 0xa0));
    EXPECT_FALSE(d.found(0, 0xa0));  // seen again
    EXPECT_FALSE(d.found(2, 0xb0));  // not selected
    EXPECT_TRUE(d.found(3, 0xc0));
    EXPECT_EQ(d.found_count(), 2u);
    EXPECT_FALSE(d.complete());
    EXPECT_TRUE(d.found(1, 0xd0));
    EXPECT_TRUE(d.complete());
    EXPECT_EQ(d.cpus(), 3u);
    EXPECT_EQ(d.hrtimer(3), 0xc0u);
    EXPECT_EQ(d.hrtimer(2), 0u);
}

// A healthy CPU: the hrtimer every 4 s, the stopper right after it, the clock at 10 Hz.
TEST(HwWatchdog, HealthyCpuIsSilent) {
    LockupPredictor p(10, 0);
    uint64_t t = 100 * kUnit;
    for (int period = 0; period < 10; period++) {
        EXPECT_EQ(p.expire(1, t).message, "");
        p.touch(1, t + 50'000);
        for (int k = 1; k < 40; k++) {
            const auto v = p.clock(1, t + uint64_t(k) * 100'000'000ull);
            EXPECT_EQ(v.message, "");
            EXPECT_FALSE(v.print);
        }
        t += 4'000'000'000ull;
    }
}

TEST(HwWatchdog, SoftLockupWhenTheStopperDoesNotRun) {
    LockupPredictor p(10, 0);
    const uint64_t t0 = 100 * kUnit;
    p.expire(0, t0);
    p.touch(0, t0);
    // 5 units later the stopper has not run: over 2T/5 = 4.
    const auto v = p.expire(0, t0 + 5 * kUnit);
    EXPECT_EQ(v.message, "WILL: soft lockup - CPU#0 [105 - 100 > 4]");
    EXPECT_TRUE(v.print);
    EXPECT_TRUE(p.print_sched(0));
    EXPECT_FALSE(p.print_sched(1));
    // The clock samples of that CPU are printed meanwhile.
    EXPECT_TRUE(p.clock(0, t0 + 5 * kUnit + 1000).print);
    p.touch(0, t0 + 6 * kUnit);
    EXPECT_FALSE(p.print_sched(0));
    EXPECT_FALSE(p.clock(0, t0 + 6 * kUnit + 1000).print);
}

TEST(HwWatchdog, SoftDebugWithVerbose) {
    LockupPredictor p(10, 1);
    p.expire(0, 100 * kUnit);
    EXPECT_EQ(p.expire(0, 101 * kUnit).message, "");  // never touched: nothing to compare
    p.touch(0, 101 * kUnit);
    EXPECT_EQ(p.expire(0, 104 * kUnit).message, "DEBUG: soft lockup - CPU#0 [104 - 101 <= 4]");
}

TEST(HwWatchdog, HardLockupWhenTheHrtimerStops) {
    LockupPredictor p(10, 0);
    const uint64_t t0 = 1'000'000'000'000ull;
    p.expire(2, t0);
    EXPECT_FALSE(p.clock(2, t0 + 100).print);  // first sample: saves the count
    // The hrtimer stays silent: 4.2 s later the clock sees the same count.
    EXPECT_EQ(p.clock(2, t0 + 4'200'000'000ull).message, "");  // not above the threshold
    const auto v = p.clock(2, t0 + 4'300'000'000ull);
    EXPECT_EQ(v.message, "WILL: hard lockup - CPU#2 [1004300000000 - 1000000000000 > 4200000000]");
    EXPECT_TRUE(v.print);
    // The hrtimer fires again: the next sample sees a new count.
    p.expire(2, t0 + 4'400'000'000ull);
    EXPECT_FALSE(p.clock(2, t0 + 4'500'000'000ull).print);
}

TEST(HwWatchdog, CancelledHrtimerIsNoLockup) {
    LockupPredictor p(10, 0);
    const uint64_t t0 = 1'000'000'000'000ull;
    p.expire(0, t0);
    p.clock(0, t0 + 1);
    p.cancel(0);
    EXPECT_EQ(p.clock(0, t0 + 9'000'000'000ull).message, "");
    p.start(0, t0 + 9'000'000'001ull);
    EXPECT_EQ(p.clock(0, t0 + 9'100'000'000ull).message, "");
}

TEST(HwWatchdog, VeryVerbosePrintsEveryClockSample) {
    LockupPredictor p(10, 2);
    EXPECT_TRUE(p.clock(0, 1).print);
}

}  // namespace
}  // namespace perfprof::hw
