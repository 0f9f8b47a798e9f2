// A Context for running a profiler's plan() in a unit test: the options parsed from a command
// line as main() parses them, the attached threads and CPU count of a session the test makes
// up, and a Tep reading the recorded formats of tests/fixtures/formats instead of tracefs.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/parser.h"
#include "fake_context.h"
#include "perf-prof/profiler.h"
#include "shell.h"
#include "tep/tep.h"

namespace perfprof::unit {

// tests/fixtures/formats of the repository holding this test binary, or of the current directory.
inline std::string recorded_formats_dir() {
    namespace fs = std::filesystem;
    for (fs::path p = fs::path(test::self_exe()).parent_path(); !p.empty() && p != p.root_path();
         p = p.parent_path())
        if (fs::exists(p / "tests/fixtures/formats")) return (p / "tests/fixtures/formats").string();
    return "tests/fixtures/formats";
}

class PlanContext : public FakeContext {
public:
    // `args` is argv[1..] ("task-state", "-S", ...); `threads` what a session attached to -p/-t
    // or a workload would have found, ascending.
    explicit PlanContext(const std::vector<std::string>& args, std::vector<int> threads = {}, int cpus = 2)
        : FakeContext("WALL", cpus, [](uint32_t) { return std::string("comm"); }),
          parsed_(cli::parse(args, all_profilers())),
          threads_(std::move(threads)),
          tep_(recorded_formats_dir()) {}

    const Options& options() const override { return parsed_.opt; }
    tep::Tep& tep() override { return tep_; }
    const std::vector<int>& threads() const override { return threads_; }

    const ProfilerInfo& info() const { return *parsed_.profiler; }
    // The profiler as the session creates it; plan() may be called once on it.
    Profiler& profiler() {
        if (!profiler_) profiler_ = parsed_.profiler->create(*this);
        return *profiler_;
    }
    EventPlan plan() { return profiler().plan(); }

private:
    cli::Parsed parsed_;
    std::vector<int> threads_;
    tep::Tep tep_;
    std::unique_ptr<Profiler> profiler_;
};

}  // namespace perfprof::unit
