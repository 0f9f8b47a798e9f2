#include "core/parse.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>

#include "perf-prof/error.h"

using perfprof::Error;
using namespace perfprof::core;

namespace {

// Runs f, expects a usage Error and returns its message.
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

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

}  // namespace

// ---- parse_id_list ----

TEST(ParseIdList, OtherIdsSameSyntax) {
    EXPECT_EQ(parse_id_list("120,0-2,1", "prio", 139), (std::vector<int>{0, 1, 2, 120}));
    EXPECT_EQ(parse_id_list("139", "prio", 139), (std::vector<int>{139}));
    EXPECT_EQ(usage_error([] { parse_id_list("140", "prio", 139); }),
              "invalid prio list '140': prio number above 139 in '140'");
    EXPECT_EQ(usage_error([] { parse_id_list("", "prio", 139); }), "invalid prio list '': empty");
    EXPECT_EQ(usage_error([] { parse_id_list("1,,2", "prio", 139); }),
              "invalid prio list '1,,2': empty item");
}

// ---- parse_cpu_list ----

TEST(ParseCpuList, Single) {
    EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
}
TEST(ParseCpuList, Range) {
    EXPECT_EQ(parse_cpu_list("1-5"), (std::vector<int>{1, 2, 3, 4, 5}));
}
TEST(ParseCpuList, Mixed) {
    EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
}
TEST(ParseCpuList, OneElementRange) {
    EXPECT_EQ(parse_cpu_list("7-7"), (std::vector<int>{7}));
}
TEST(ParseCpuList, SortedAndDeduplicated) {
    EXPECT_EQ(parse_cpu_list("8,2-4,3,0,8,1-2"), (std::vector<int>{0, 1, 2, 3, 4, 8}));
}
TEST(ParseCpuList, LeadingZeros) {
    EXPECT_EQ(parse_cpu_list("007,010"), (std::vector<int>{7, 10}));
}
TEST(ParseCpuList, UpperLimitAccepted) {
    EXPECT_EQ(parse_cpu_list("8191"), (std::vector<int>{8191}));
    EXPECT_EQ(parse_cpu_list("0-8191").size(), 8192u);
}

TEST(ParseCpuList, Empty) {
    EXPECT_EQ(usage_error([] { parse_cpu_list(""); }), "invalid CPU list '': empty");
}
TEST(ParseCpuList, EmptyItems) {
    for (const char* s : {",", "1,", ",1", "1,,2"})
        EXPECT_EQ(usage_error([&] { parse_cpu_list(s); }),
                  "invalid CPU list '" + std::string(s) + "': empty item");
}
TEST(ParseCpuList, Reversed) {
    EXPECT_EQ(usage_error([] { parse_cpu_list("0,5-3"); }),
              "invalid CPU list '0,5-3': range 5-3 is reversed");
}
TEST(ParseCpuList, BadItems) {
    for (const char* s :
         {"-1", "1-", "-", "1--2", "1-2-3", "a", "1a", "0x1", "+1", " 1", "1 ", "1.5", "1-b", "1,-3"}) {
        std::string msg = usage_error([&] { parse_cpu_list(s); });
        EXPECT_TRUE(starts_with(msg, "invalid CPU list '" + std::string(s) + "': bad item"))
            << s << " → " << msg;
    }
}
TEST(ParseCpuList, TooLarge) {
    for (const char* s : {"8192", "0-1048577", "99999999999999999999999999", "4294967296"}) {
        std::string msg = usage_error([&] { parse_cpu_list(s); });
        EXPECT_TRUE(starts_with(msg, "invalid CPU list '" + std::string(s) + "': CPU number above 8191"))
            << s << " → " << msg;
    }
}

// ---- parse_pid_list ----

TEST(ParsePidList, Single) {
    EXPECT_EQ(parse_pid_list("1"), (std::vector<int>{1}));
}
TEST(ParsePidList, KeepsOrderDropsDuplicates) {
    EXPECT_EQ(parse_pid_list("12,7,12,3,7"), (std::vector<int>{12, 7, 3}));
}
TEST(ParsePidList, Large) {
    EXPECT_EQ(parse_pid_list("2147483647"), (std::vector<int>{2147483647}));
}
TEST(ParsePidList, Empty) {
    EXPECT_EQ(usage_error([] { parse_pid_list(""); }), "invalid PID list '': empty");
}
TEST(ParsePidList, EmptyItems) {
    for (const char* s : {",", "1,", ",1", "1,,2"})
        EXPECT_EQ(usage_error([&] { parse_pid_list(s); }),
                  "invalid PID list '" + std::string(s) + "': empty item");
}
TEST(ParsePidList, Zero) {
    EXPECT_EQ(usage_error([] { parse_pid_list("5,0"); }), "invalid PID list '5,0': id 0 is not a process");
    EXPECT_EQ(usage_error([] { parse_pid_list("000"); }), "invalid PID list '000': id 0 is not a process");
}
TEST(ParsePidList, BadIds) {
    for (const char* s : {"-1", "+1", "1-3", "abc", "12x", "0x10", " 1", "1 ", "1.0"}) {
        std::string msg = usage_error([&] { parse_pid_list(s); });
        EXPECT_TRUE(starts_with(msg, "invalid PID list '" + std::string(s) + "': bad id"))
            << s << " → " << msg;
    }
}
TEST(ParsePidList, TooLarge) {
    EXPECT_EQ(usage_error([] { parse_pid_list("2147483648"); }),
              "invalid PID list '2147483648': id 2147483648 is too large");
    EXPECT_EQ(usage_error([] { parse_pid_list("1,99999999999999999999999"); }),
              "invalid PID list '1,99999999999999999999999': id 99999999999999999999999 is too large");
}

// ---- parse_time_ns ----

TEST(ParseTime, NoUnitIsNs) {
    EXPECT_EQ(parse_time_ns("1234"), 1234u);
}
TEST(ParseTime, Zero) {
    EXPECT_EQ(parse_time_ns("0"), 0u);
}
TEST(ParseTime, Units) {
    EXPECT_EQ(parse_time_ns("5ns"), 5u);
    EXPECT_EQ(parse_time_ns("5us"), 5'000u);
    EXPECT_EQ(parse_time_ns("5ms"), 5'000'000u);
    EXPECT_EQ(parse_time_ns("5s"), 5'000'000'000u);
}
TEST(ParseTime, UpstreamCapitalUnits) {
    EXPECT_EQ(parse_time_ns("5Ns"), 5u);
    EXPECT_EQ(parse_time_ns("5Us"), 5'000u);
    EXPECT_EQ(parse_time_ns("5Ms"), 5'000'000u);
}
TEST(ParseTime, LeadingPlus) {
    EXPECT_EQ(parse_time_ns("+10ms"), 10'000'000u);
    EXPECT_EQ(parse_time_ns("+7"), 7u);
}
TEST(ParseTime, LeadingZerosAreDecimal) {
    EXPECT_EQ(parse_time_ns("010us"), 10'000u);
}
TEST(ParseTime, Max) {
    EXPECT_EQ(parse_time_ns("18446744073709551615"), UINT64_MAX);
    EXPECT_EQ(parse_time_ns("18446744073s"), 18446744073'000'000'000u);
}

TEST(ParseTime, BadSyntax) {
    for (const char* s : {"",   "+",    "ms",   "s",    "-5ms", "1.5ms", "5 ms", " 5",  "5x",  "5S", "5MS",
                          "5m", "5sec", "5msx", "5us5", "0x10", "++5",   "5Ss",  "5ps", "5mS", "5,5"}) {
        EXPECT_EQ(usage_error([&] { parse_time_ns(s); }),
                  "invalid time '" + std::string(s) + "': expected a number with unit s, ms, us or ns")
            << s;
    }
}
TEST(ParseTime, Overflow) {
    for (const char* s : {"18446744073709551616", "99999999999999999999999", "18446744074s",
                          "18446744073710ms", "18446744073709552us"}) {
        EXPECT_EQ(usage_error([&] { parse_time_ns(s); }),
                  "invalid time '" + std::string(s) + "': value too large")
            << s;
    }
}

// ---- parse_number ----

TEST(ParseNumber, Bases) {
    EXPECT_EQ(parse_number("42", "x"), 42);
    EXPECT_EQ(parse_number("0x1f", "x"), 31);
    EXPECT_EQ(parse_number("0X1F", "x"), 31);
    EXPECT_EQ(parse_number("017", "x"), 15);
    EXPECT_EQ(parse_number("0", "x"), 0);
}
TEST(ParseNumber, Signs) {
    EXPECT_EQ(parse_number("-12", "x"), -12);
    EXPECT_EQ(parse_number("+12", "x"), 12);
    EXPECT_EQ(parse_number("-0x10", "x"), -16);
}
TEST(ParseNumber, Limits) {
    EXPECT_EQ(parse_number("9223372036854775807", "x"), LLONG_MAX);
    EXPECT_EQ(parse_number("-9223372036854775808", "x"), LLONG_MIN);
}
TEST(ParseNumber, LeadingSpaceLikeStrtol) {
    EXPECT_EQ(parse_number(" 5", "x"), 5);
}
TEST(ParseNumber, Errors) {
    for (const char* s : {"", "abc", "12abc", "0x", "08", "1.5", "5 ", "-", "+", "0xg", "9223372036854775808",
                          "-9223372036854775809", "1e3"}) {
        EXPECT_EQ(usage_error([&] { parse_number(s, "interval"); }),
                  "option `interval' expects a numerical value")
            << s;
    }
}
TEST(ParseNumber, EmbeddedNul) {
    std::string s(
        "12\0"
        "3",
        4);
    EXPECT_EQ(usage_error([&] { parse_number(s, "exit-N"); }), "option `exit-N' expects a numerical value");
}

// ---- parse_pages ----

TEST(ParsePages, PowersOfTwo) {
    EXPECT_EQ(parse_pages("1"), 1);
    EXPECT_EQ(parse_pages("2"), 2);
    EXPECT_EQ(parse_pages("64"), 64);
    EXPECT_EQ(parse_pages("0x100"), 256);
    EXPECT_EQ(parse_pages("1073741824"), 1 << 30);
}
TEST(ParsePages, NotPowerOfTwo) {
    EXPECT_EQ(usage_error([] { parse_pages("3"); }), "-m/--mmap-pages must be a power of two, got 3");
    EXPECT_EQ(usage_error([] { parse_pages("0"); }), "-m/--mmap-pages must be a power of two, got 0");
    EXPECT_EQ(usage_error([] { parse_pages("-4"); }), "-m/--mmap-pages must be a power of two, got -4");
    EXPECT_EQ(usage_error([] { parse_pages("0x11"); }), "-m/--mmap-pages must be a power of two, got 17");
    EXPECT_EQ(usage_error([] { parse_pages("2147483648"); }),
              "-m/--mmap-pages must be a power of two, got 2147483648");
}
TEST(ParsePages, NotANumber) {
    EXPECT_EQ(usage_error([] { parse_pages("8k"); }), "option `mmap-pages' expects a numerical value");
}

// ---- parse_percent ----

TEST(ParsePercent, Range) {
    EXPECT_EQ(parse_percent("0", "watermark"), 0);
    EXPECT_EQ(parse_percent("50", "watermark"), 50);
    EXPECT_EQ(parse_percent("100", "watermark"), 100);
}
TEST(ParsePercent, OutOfRange) {
    EXPECT_EQ(usage_error([] { parse_percent("101", "watermark"); }),
              "option `watermark' expects a percentage from 0 to 100, got 101");
    EXPECT_EQ(usage_error([] { parse_percent("-1", "watermark"); }),
              "option `watermark' expects a percentage from 0 to 100, got -1");
}
TEST(ParsePercent, NotANumber) {
    EXPECT_EQ(usage_error([] { parse_percent("50%", "watermark"); }),
              "option `watermark' expects a numerical value");
}
