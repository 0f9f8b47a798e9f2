// sched-migrate's cache topology (sched/cache_topology) against fake sysfs trees in a temp dir.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "perf-prof/error.h"
#include "sched/cache_topology.h"

namespace perfprof::sched {
namespace {

namespace fs = std::filesystem;

class FakeSys {
public:
    FakeSys() {
        char tmpl[] = "/tmp/topology_test.XXXXXX";
        root_ = ::mkdtemp(tmpl);
    }
    ~FakeSys() { fs::remove_all(root_); }
    void put(const std::string& rel, const std::string& text) {
        fs::path p = fs::path(root_) / "devices/system/cpu" / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text << "\n";
    }
    void cache(int cpu, int index, int level, const std::string& type, const std::string& list) {
        const std::string d = "cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(index) + "/";
        if (level) put(d + "level", std::to_string(level));
        put(d + "type", type);
        put(d + "shared_cpu_list", list);
    }
    const std::string& root() const { return root_; }

private:
    std::string root_;
};

TEST(CacheTopology, LevelsNotIndexNumbers) {
    FakeSys s;
    s.put("present", "0-3");
    for (int c = 0; c < 4; c++) {
        s.cache(c, 0, 1, "Data", std::to_string(c));
        s.cache(c, 1, 1, "Instruction", std::to_string(c));
        // L2 shared by pairs, at index3; the LLC (level 3) at index2: the level decides
        s.cache(c, 3, 2, "Unified", c < 2 ? "0-1" : "2-3");
        s.cache(c, 2, 3, "Unified", "0-3");
    }
    CacheTopology t = CacheTopology::read(s.root());
    EXPECT_EQ(t.llc_level(), 3);
    EXPECT_TRUE(t.same_l2(0, 1));
    EXPECT_FALSE(t.same_l2(1, 2));
    EXPECT_TRUE(t.same_llc(1, 2));
    EXPECT_FALSE(t.same_llc(0, 7));  // unknown CPU
}

TEST(CacheTopology, MissingLevelIsNotShared) {
    FakeSys s;
    s.put("present", "0-1");
    s.cache(0, 0, 1, "Data", "0");
    s.cache(1, 0, 1, "Data", "1");
    s.cache(0, 2, 3, "Unified", "0-1");
    s.cache(1, 2, 0, "Unified", "0-1");  // no level file: not counted
    CacheTopology t = CacheTopology::read(s.root());
    EXPECT_FALSE(t.same_l2(0, 1));
    EXPECT_FALSE(t.same_llc(0, 1));
}

TEST(CacheTopology, NoPresentListIsAnError) {
    FakeSys s;
    EXPECT_THROW(CacheTopology::read(s.root()), Error);
}

}  // namespace
}  // namespace perfprof::sched
