#include "perf/cgroup.h"

#include <fcntl.h>
#include <regex.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "perf-prof/error.h"

namespace perfprof::perf {

namespace {

// A cgroup v1 hierarchy with the perf_event controller, else the v2 unified hierarchy.
std::string cgroup_mount() {
    std::ifstream mounts("/proc/mounts");
    std::string dev, dir, type, opts, rest, v2;
    while (mounts >> dev >> dir >> type >> opts && std::getline(mounts, rest)) {
        if (type == "cgroup" && ("," + opts + ",").find(",perf_event,") != std::string::npos) return dir;
        if (type == "cgroup2" && v2.empty()) v2 = dir;
    }
    if (v2.empty()) throw Error("no perf_event cgroup hierarchy is mounted");
    return v2;
}

std::vector<std::string> split(std::string_view s) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        size_t end = s.find(',', start);
        out.emplace_back(s.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return out;
}

std::vector<std::string> match_regex(const std::string& mount, const std::vector<std::string>& res) {
    const std::vector<std::string> dirs = cgroup_dirs(mount);
    std::vector<std::string> out;
    for (const std::string& r : res) {
        regex_t re;
        if (regcomp(&re, r.c_str(), REG_NOSUB) != 0)
            throw Error::usage("invalid cgroup regular expression '" + r + "'");
        for (const std::string& d : dirs)
            if (regexec(&re, d.c_str(), 0, nullptr, 0) == 0) out.push_back(d);
        regfree(&re);
    }
    if (out.empty()) throw Error("The regular expression did not match any cgroups.");
    return out;
}

}  // namespace

std::vector<std::string> cgroup_dirs(const std::string& mount) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(mount, ec)) return {};
    std::vector<std::string> dirs{""};
    fs::recursive_directory_iterator it(mount, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        std::error_code gone;  // an entry removed meanwhile is skipped, the walk goes on
        if (!it->is_directory(gone) || it->is_symlink(gone)) continue;
        dirs.push_back(it->path().lexically_relative(mount).string());
    }
    return dirs;
}

std::vector<Cgroup> open_cgroups(std::string_view list) {
    const std::string mount = cgroup_mount();
    std::vector<std::string> names = split(list);
    if (list.find_first_of("{}[]()|*+?^$") != std::string_view::npos) names = match_regex(mount, names);
    std::vector<Cgroup> out;
    for (const std::string& n : names) {
        std::string path = n.empty() ? mount : mount + "/" + (n[0] == '/' ? n.substr(1) : n);
        core::Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd) throw Error::sys(errno, "no access to cgroup " + path);
        out.push_back({n, std::move(fd)});
    }
    return out;
}

}  // namespace perfprof::perf
