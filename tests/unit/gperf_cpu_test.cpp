// gperftools' binary CPU profile (output/gperf_cpu): the words google-pprof reads.
#include "output/gperf_cpu.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace perfprof::output {
namespace {

std::vector<uint64_t> words(const std::string& s, size_t n) {
    std::vector<uint64_t> w(n);
    std::memcpy(w.data(), s.data(), n * 8);
    return w;
}

TEST(GperfCpuProfile, HeaderStacksTrailerMaps) {
    GperfCpuProfile p(10000);
    const uint64_t a[] = {0x401000, 0x401500, 0x7f0000001000};
    p.add(a, 7);
    const uint64_t b[] = {0xffffffff81000000, 0x402000};
    p.add(b, 2);
    p.add({}, 5);              // no pcs: no stack
    const uint64_t z[] = {0};  // would read as the trailer
    p.add(z, 1);
    p.add(a, 0);
    const std::string maps = "00400000-00452000 r-xp 00000000 fd:01 1 /bin/x\n";
    const std::string out = p.encode(maps);
    const std::vector<uint64_t> want = {0,
                                        3,
                                        0,
                                        10000,
                                        0,  // header
                                        7,
                                        3,
                                        0x401000,
                                        0x401500,
                                        0x7f0000001000,  // stacks
                                        2,
                                        2,
                                        0xffffffff81000000,
                                        0x402000,  //
                                        0,
                                        1,
                                        0};  // trailer
    ASSERT_EQ(out.size(), want.size() * 8 + maps.size());
    EXPECT_EQ(words(out, want.size()), want);
    EXPECT_EQ(out.substr(want.size() * 8), maps);
}

TEST(GperfCpuProfile, Empty) {
    const std::string out = GperfCpuProfile(1000).encode("");
    EXPECT_EQ(words(out, 8), (std::vector<uint64_t>{0, 3, 0, 1000, 0, 0, 1, 0}));
}

}  // namespace
}  // namespace perfprof::output
