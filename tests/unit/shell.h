// Helpers of the unit tests that look at real files with real tools (readelf, nm, cc).
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

namespace perfprof::test {

// The path of the running test binary.
inline std::string self_exe() {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/self/exe", ec).string();
}

// stdout of a shell command; empty when it cannot run.
inline std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
}

// A file of build/fixtures (tests/fixtures/build.sh) of the repository holding this test binary
// (build/unit_tests or build/san/unit_tests), or of the current directory.
inline std::string fixture(const std::string& name) {
    namespace fs = std::filesystem;
    for (fs::path p = fs::path(self_exe()).parent_path(); !p.empty() && p != p.root_path();
         p = p.parent_path())
        if (fs::exists(p / "tests/fixtures/build.sh")) return (p / "build/fixtures" / name).string();
    return "build/fixtures/" + name;
}

}  // namespace perfprof::test
