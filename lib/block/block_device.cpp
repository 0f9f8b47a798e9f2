#include "block/block_device.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "perf-prof/error.h"

namespace perfprof::block {

namespace {

bool read_u64(const std::string& path, uint64_t& v) {
    std::ifstream f(path);
    unsigned long long x;
    if (!(f >> x)) return false;
    v = x;
    return true;
}

}  // namespace

std::string BlockDev::filter() const {
    std::string f = "dev==" + std::to_string(dev());
    if (partition) f += " && sector>=" + std::to_string(start) + " && sector<" + std::to_string(end);
    return f;
}

BlockDev resolve_block_device(unsigned major, unsigned minor, const std::string& sys) {
    BlockDev d{major, minor};
    const std::string dir = sys + "/dev/block/" + std::to_string(major) + ":" + std::to_string(minor);
    if (::access((dir + "/partition").c_str(), F_OK) != 0) return d;
    uint64_t size = 0;
    if (!read_u64(dir + "/start", d.start) || !read_u64(dir + "/size", size))
        throw Error("blktrace: cannot read " + dir + "/start and size");
    d.partition = true;
    d.end = d.start + size;
    char real[PATH_MAX];
    std::string parent;
    if (!::realpath(dir.c_str(), real) || !std::getline(std::ifstream(std::string(real) + "/../dev"), parent))
        throw Error("blktrace: cannot find the disk of " + dir);
    unsigned ma = 0, mi = 0;
    if (std::sscanf(parent.c_str(), "%u:%u", &ma, &mi) != 2)
        throw Error("blktrace: bad dev file of the disk of " + dir);
    d.major = ma;
    d.minor = mi;
    return d;
}

}  // namespace perfprof::block
