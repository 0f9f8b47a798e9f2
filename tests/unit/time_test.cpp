#include "core/time.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

using namespace perfprof::core;

namespace {

// The whole unit-test binary shares one environment, so put TZ back afterwards.
class FormatWallUtc : public ::testing::Test {
protected:
    void SetUp() override {
        if (const char* tz = std::getenv("TZ")) saved_ = tz;
        setenv("TZ", "UTC", 1);
        tzset();
    }
    void TearDown() override {
        if (saved_)
            setenv("TZ", saved_->c_str(), 1);
        else
            unsetenv("TZ");
        tzset();
    }

private:
    std::optional<std::string> saved_;
};

constexpr int64_t kSec = 1'000'000'000;

}  // namespace

// ---- format_wall ----

TEST_F(FormatWallUtc, FormatWallKnownValue) {
    // 2025-03-11 09:52:40 UTC = 1741686760.
    EXPECT_EQ(format_wall(1741686760 * kSec + 118201'000), "2025-03-11 09:52:40.118201");
}
TEST_F(FormatWallUtc, FormatWallTruncatesMicroseconds) {
    EXPECT_EQ(format_wall(1741686760 * kSec + 118201'999), "2025-03-11 09:52:40.118201");
    EXPECT_EQ(format_wall(1741686760 * kSec + 999'999'999), "2025-03-11 09:52:40.999999");
}
TEST_F(FormatWallUtc, FormatWallEpochAndNegative) {
    EXPECT_EQ(format_wall(0), "1970-01-01 00:00:00.000000");
    EXPECT_EQ(format_wall(-1), "1970-01-01 00:00:00.000000");
    EXPECT_EQ(format_wall(INT64_MIN), "1970-01-01 00:00:00.000000");
}
TEST_F(FormatWallUtc, FormatWallPadding) {
    EXPECT_EQ(format_wall(1 * kSec + 7'000), "1970-01-01 00:00:01.000007");
}
TEST_F(FormatWallUtc, FormatWallMax) {
    EXPECT_EQ(format_wall(INT64_MAX), "2262-04-11 23:47:16.854775");
}
TEST_F(FormatWallUtc, FormatWallLength) {
    EXPECT_EQ(format_wall(realtime_now_ns()).size(), 26u);
}
TEST(FormatWall, UsesLocalTimeZone) {
    const char* old = std::getenv("TZ");
    std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
    setenv("TZ", "UTC-2", 1);  // POSIX sign convention: two hours east of UTC
    tzset();
    // A second no other test formats: append_wall keeps the last second's text per thread.
    std::string got = format_wall(int64_t(12345) * 1000000000);
    if (saved)
        setenv("TZ", saved->c_str(), 1);
    else
        unsetenv("TZ");
    tzset();
    EXPECT_EQ(got, "1970-01-01 05:25:45.000000");  // 03:25:45 UTC
}

// ---- format_evts ----

TEST(FormatEvts, Rounding) {
    EXPECT_EQ(format_evts(0), "0.000000");
    EXPECT_EQ(format_evts(499), "0.000000");
    EXPECT_EQ(format_evts(500), "0.000001");
    EXPECT_EQ(format_evts(1'499), "0.000001");
    EXPECT_EQ(format_evts(81105'009876'400), "81105.009876");
    EXPECT_EQ(format_evts(81105'009876'500), "81105.009877");
    EXPECT_EQ(format_evts(999'999'500), "1.000000");
    EXPECT_EQ(format_evts(12 * kSec), "12.000000");
}
TEST(FormatEvts, NoWrapAtMax) {
    // (UINT64_MAX + 500) / 1000 would wrap; UINT64_MAX = 18446744073709551615.
    EXPECT_EQ(format_evts(UINT64_MAX), "18446744073.709552");
}

// ---- clocks ----

TEST(Clocks, NowIsSane) {
    int64_t r = realtime_now_ns();
    EXPECT_GT(r, 1'600'000'000 * kSec);  // after 2020
    int64_t m1 = monotonic_now_ns();
    int64_t m2 = monotonic_now_ns();
    EXPECT_GT(m1, 0);
    EXPECT_GE(m2, m1);
}

// ---- WallClock ----

TEST(WallClock, Uncalibrated) {
    WallClock c;
    EXPECT_FALSE(c.calibrated());
    EXPECT_EQ(c.calibrated_at_perf(), 0u);
    EXPECT_EQ(c.from_monotonic(123456789), 0u);
    int64_t before = realtime_now_ns();
    int64_t got = c.to_realtime(42);
    int64_t after = realtime_now_ns();
    EXPECT_GE(got, before);
    EXPECT_LE(got, after);
}

TEST(WallClock, ToRealtimeAroundBase) {
    WallClock c;
    const int64_t rt = 1741686760 * kSec;
    c.calibrate(5000 * kSec, rt, 4000 * kSec);
    EXPECT_TRUE(c.calibrated());
    EXPECT_EQ(c.calibrated_at_perf(), static_cast<uint64_t>(5000 * kSec));
    EXPECT_EQ(c.to_realtime(5000 * kSec), rt);
    EXPECT_EQ(c.to_realtime(5000 * kSec + 1234), rt + 1234);
    EXPECT_EQ(c.to_realtime(5000 * kSec - 1234), rt - 1234);
    EXPECT_EQ(c.to_realtime(0), rt - 5000 * kSec);
}

TEST(WallClock, Recalibrate) {
    WallClock c;
    c.calibrate(100, 1000, 10);
    c.calibrate(200, 5000, 20);
    EXPECT_EQ(c.calibrated_at_perf(), 200u);
    EXPECT_EQ(c.to_realtime(250), 5050);
    EXPECT_EQ(c.from_monotonic(30), 210u);
}

TEST(WallClock, ToRealtimeSaturates) {
    WallClock c;
    c.calibrate(0, INT64_MAX - 10, 0);
    EXPECT_EQ(c.to_realtime(100), INT64_MAX);
    c.calibrate(UINT64_MAX, INT64_MIN + 10, 0);
    EXPECT_EQ(c.to_realtime(0), INT64_MIN + 11);  // perf 0 is one ns after UINT64_MAX, modulo 2^64
    c.calibrate(1000, INT64_MIN + 10, 0);
    EXPECT_EQ(c.to_realtime(0), INT64_MIN);
}

TEST(WallClock, FromMonotonic) {
    WallClock c;
    c.calibrate(5000 * kSec, 1741686760 * kSec, 4000 * kSec);
    EXPECT_EQ(c.from_monotonic(4000 * kSec), static_cast<uint64_t>(5000 * kSec));
    EXPECT_EQ(c.from_monotonic(4000 * kSec + 777), static_cast<uint64_t>(5000 * kSec + 777));
    EXPECT_EQ(c.from_monotonic(4000 * kSec - 777), static_cast<uint64_t>(5000 * kSec - 777));
    // Before perf time 0 clamps to 0.
    EXPECT_EQ(c.from_monotonic(0), static_cast<uint64_t>(1000 * kSec));
    EXPECT_EQ(c.from_monotonic(-1001 * kSec), 0u);
    EXPECT_EQ(c.from_monotonic(INT64_MIN), 0u);
}

TEST(WallClock, FromMonotonicSaturates) {
    WallClock c;
    c.calibrate(UINT64_MAX - 5, 0, 0);
    EXPECT_EQ(c.from_monotonic(5), UINT64_MAX);
    EXPECT_EQ(c.from_monotonic(INT64_MAX), UINT64_MAX);
    c.calibrate(10, 0, INT64_MIN);
    EXPECT_EQ(c.from_monotonic(INT64_MAX), UINT64_MAX);  // the difference itself overflows int64
    c.calibrate(10, 0, INT64_MAX);
    EXPECT_EQ(c.from_monotonic(INT64_MIN), 0u);
    c.calibrate(UINT64_MAX, 0, 0);
    EXPECT_EQ(c.from_monotonic(INT64_MIN), static_cast<uint64_t>(INT64_MAX));
}
