#include "tep/tracefs.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/fd.h"
#include "perf-prof/error.h"

namespace perfprof::tep {

namespace {

constexpr const char* kDefaultMount = "/sys/kernel/tracing";

bool has_events(const std::string& dir) {
    struct stat st;
    return ::stat((dir + "/events").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// tracefs mounted anywhere, or debugfs with its tracing directory.
std::string find_mounted() {
    std::ifstream mounts("/proc/mounts");
    std::string dev, dir, type, rest;
    std::string debugfs;
    while (mounts >> dev >> dir >> type && std::getline(mounts, rest)) {
        if (type == "tracefs" && has_events(dir)) return dir;
        if (type == "debugfs" && debugfs.empty()) debugfs = dir;
    }
    // Opening debugfs/tracing automounts tracefs there on kernels since 4.1.
    if (!debugfs.empty() && has_events(debugfs + "/tracing")) return debugfs + "/tracing";
    return {};
}

std::string locate() {
    std::string dir = find_mounted();
    if (!dir.empty()) return dir;
    if (::geteuid() != 0)
        throw Error("tracefs is not mounted",
                    std::string("as root: mount -t tracefs nodev ") + kDefaultMount);
    if (::mount("nodev", kDefaultMount, "tracefs", 0, nullptr) != 0 && errno != EBUSY)
        throw Error::sys(errno, std::string("cannot mount tracefs at ") + kDefaultMount,
                         "the kernel may lack CONFIG_TRACING");
    if (!has_events(kDefaultMount))
        throw Error(std::string("tracefs at ") + kDefaultMount + " has no events directory");
    return kDefaultMount;
}

}  // namespace

const std::string& tracefs_dir() {
    static const std::string dir = locate();
    return dir;
}

std::vector<std::string> tracepoint_list() {
    return tracepoints_in(tracefs_dir() + "/events");
}

std::vector<std::string> tracepoints_in(const std::string& events_dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& sys : fs::directory_iterator(events_dir, ec)) {
        if (!sys.is_directory(ec)) continue;
        std::error_code ec2;
        for (const auto& ev : fs::directory_iterator(sys.path(), ec2))
            if (ev.is_directory(ec2) && fs::exists(ev.path() / "id", ec2))
                out.push_back(sys.path().filename().string() + ":" + ev.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string read_file(const std::string& path) {
    core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error::sys(errno, "cannot read " + path);
    std::string out;
    char buf[8192];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error::sys(errno, "cannot read " + path);
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

}  // namespace perfprof::tep
