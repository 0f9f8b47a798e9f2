// sched-migrate's CPU cache topology (SPEC §P19): which CPUs share the L2 and the last-level
// cache, read from sysfs. Each cpuN/cache/indexK says its `level`: the level-2 entry gives the
// L2, the highest level the LLC (Recommendation: not the fixed index2/index3). A CPU without
// such a level shares that cache with no other CPU.
#pragma once

#include <string>
#include <vector>

namespace perfprof::sched {

class CacheTopology {
public:
    // `root` is the sysfs root ("/sys", or a fake tree in tests); reads every CPU of
    // devices/system/cpu/present. Throws Error when that list cannot be read.
    static CacheTopology read(const std::string& root = "/sys");

    bool same_l2(int a, int b) const { return same(l2_, a, b); }
    bool same_llc(int a, int b) const { return same(llc_, a, b); }
    int llc_level() const { return llc_level_; }

private:
    static bool same(const std::vector<std::string>& lists, int a, int b);
    std::vector<std::string> l2_, llc_;  // shared_cpu_list per CPU; "" = not shared
    int llc_level_ = 0;
};

}  // namespace perfprof::sched
