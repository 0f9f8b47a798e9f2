// The perf_event_open error explainer (lib/perf/event_list.cpp).
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "perf-prof/error.h"
#include "perf/event_list.h"

using namespace perfprof;

namespace {

Error explained(int err, const perf_event_attr& attr) {
    try {
        perf::throw_open_error(err, "profile:cpu-clock", attr, "CPU 0");
    } catch (const Error& e) {
        return e;
    }
    return Error("not thrown");
}

}  // namespace

TEST(OpenError, FrequencyAboveTheKernelLimitIsNamed) {
    const uint64_t max = perf::max_sample_rate();
    if (!max) GTEST_SKIP() << "no /proc/sys/kernel/perf_event_max_sample_rate";
    perf_event_attr a{};
    a.freq = 1;
    a.sample_freq = max + 1;
    Error e = explained(EINVAL, a);
    EXPECT_EQ(std::string(e.what()), "cannot open profile:cpu-clock on CPU 0: " + std::to_string(max + 1) +
                                         " samples a second is above kernel.perf_event_max_sample_rate (" +
                                         std::to_string(max) + ")");
    EXPECT_NE(e.hint().find("sysctl kernel.perf_event_max_sample_rate=" + std::to_string(max + 1)),
              std::string::npos);
}

TEST(OpenError, OtherInvalidAttributesKeepTheGeneralHint) {
    perf_event_attr a{};
    a.freq = 1;
    a.sample_freq = 1;
    Error e = explained(EINVAL, a);
    EXPECT_EQ(std::string(e.what()), "cannot open profile:cpu-clock on CPU 0: Invalid argument");
    EXPECT_NE(e.hint().find("rejected the event attributes"), std::string::npos);
    a.freq = 0;
    a.sample_period = uint64_t(1) << 40;  // a period, not a frequency: no limit applies
    EXPECT_EQ(std::string(explained(EINVAL, a).what()),
              "cannot open profile:cpu-clock on CPU 0: Invalid argument");
}

TEST(OpenError, StackDepthAboveTheKernelLimitIsNamed) {
    std::ifstream f("/proc/sys/kernel/perf_event_max_stack");
    int max = 0;
    if (!(f >> max) || max <= 0 || max >= 65535) GTEST_SKIP() << "no usable kernel.perf_event_max_stack";
    perf_event_attr a{};
    a.sample_type = PERF_SAMPLE_CALLCHAIN;
    a.sample_max_stack = uint16_t(max + 1);
    Error e = explained(EOVERFLOW, a);
    EXPECT_EQ(std::string(e.what()),
              "cannot open profile:cpu-clock on CPU 0: a stack of " + std::to_string(max + 1) +
                  " frames is above kernel.perf_event_max_stack (" + std::to_string(max) + ")");
    EXPECT_NE(e.hint().find("max-stack=" + std::to_string(max)), std::string::npos);
}

TEST(OpenError, UnsupportedFeatureOfAnExistingEvent) {
    perf_event_attr a{};
    a.type = PERF_TYPE_SOFTWARE;
    Error e = explained(EOPNOTSUPP, a);
    EXPECT_NE(e.hint().find("this PMU cannot do what the event asks"), std::string::npos) << e.hint();
    a.type = PERF_TYPE_HARDWARE;  // no PMU at all, most often
    EXPECT_NE(explained(EOPNOTSUPP, a).hint().find("no hardware PMU"), std::string::npos);
    a.type = PERF_TYPE_TRACEPOINT;
    EXPECT_NE(explained(ENOENT, a).hint().find("does not exist on this kernel"), std::string::npos);
}
