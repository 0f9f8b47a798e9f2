// The environment a launched command is exec'd with (perf::Workload::set_exec_env): sent to the
// waiting child with its release, replacing inherited variables and adding new ones, the rest of
// the environment untouched.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "perf/workload.h"

using perfprof::perf::Workload;

namespace {

std::string run_and_read(const std::string& script, const std::string& out,
                         const std::vector<std::pair<std::string, std::string>>& env) {
    Workload w({"/bin/sh", "-c", script});
    for (const auto& [k, v] : env) EXPECT_TRUE(w.set_exec_env(k, v));
    w.release();
    for (int i = 0; i < 5000 && !w.reap(); i++) ::usleep(1000);
    EXPECT_TRUE(w.exited());
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST(WorkloadEnv, SetReplacesAndAddsOnlyWhatIsNamed) {
    const std::string out = "/tmp/perfprof_workload_env_" + std::to_string(::getpid());
    ::setenv("PP_WL_KEEP", "kept", 1);
    ::setenv("PP_WL_REPLACE", "old", 1);
    const std::string got = run_and_read("echo \"$PP_WL_KEEP|$PP_WL_REPLACE|$PP_WL_NEW\" > " + out, out,
                                         {{"PP_WL_REPLACE", "new=value"}, {"PP_WL_NEW", "a:b"}});
    EXPECT_EQ(got, "kept|new=value|a:b\n");
    ::unlink(out.c_str());
    ::unsetenv("PP_WL_KEEP");
    ::unsetenv("PP_WL_REPLACE");
}

TEST(WorkloadEnv, WithoutAnythingSetTheEnvironmentIsInherited) {
    const std::string out = "/tmp/perfprof_workload_env2_" + std::to_string(::getpid());
    ::setenv("PP_WL_KEEP", "still", 1);
    EXPECT_EQ(run_and_read("echo \"$PP_WL_KEEP\" > " + out, out, {}), "still\n");
    ::unlink(out.c_str());
    ::unsetenv("PP_WL_KEEP");
}

TEST(WorkloadEnv, OnlyAWaitingWorkloadTakesIt) {
    Workload w({"/bin/true"});
    EXPECT_TRUE(w.set_exec_env("X", "1"));
    w.release();
    EXPECT_FALSE(w.set_exec_env("X", "1"));  // released already
}

TEST(WorkloadEnv, MoreThanTheChildsRoomIsRefused) {
    Workload w({"/bin/true"});
    EXPECT_FALSE(w.set_exec_env("X", std::string(64 * 1024, 'a')));
    EXPECT_TRUE(w.set_exec_env("X", "1"));  // what fits still goes
    w.release();
}
