#include "perf/cgroup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using perfprof::perf::cgroup_dirs;
namespace fs = std::filesystem;

TEST(Cgroup, DirsAreEveryDirectoryBelowTheMountParentsFirst) {
    const fs::path root = fs::temp_directory_path() / ("cgroup_test." + std::to_string(::getpid()));
    fs::create_directories(root / "a" / "b");
    fs::create_directories(root / "c");
    std::ofstream(root / "a" / "cgroup.procs") << "1\n";      // files are not cgroups
    fs::create_directory_symlink(root / "a", root / "link");  // links are not followed
    std::vector<std::string> dirs = cgroup_dirs(root.string());
    fs::remove_all(root);
    ASSERT_FALSE(dirs.empty());
    EXPECT_EQ(dirs[0], "");  // the root itself
    const auto at = [&](const std::string& d) {
        return std::find(dirs.begin(), dirs.end(), d) - dirs.begin();
    };
    EXPECT_LT(at("a"), at("a/b"));
    std::sort(dirs.begin(), dirs.end());
    EXPECT_EQ(dirs, (std::vector<std::string>{"", "a", "a/b", "c"}));
}

TEST(Cgroup, NoDirsOfAMissingMount) {
    EXPECT_EQ(cgroup_dirs("/nonexistent/cgroup_test"), std::vector<std::string>{});
}
