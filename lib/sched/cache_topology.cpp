#include "sched/cache_topology.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "core/parse.h"
#include "perf-prof/error.h"

namespace perfprof::sched {

namespace {

bool read_line(const std::string& path, std::string& out) {
    std::ifstream f(path);
    if (!f || !std::getline(f, out)) return false;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return true;
}

}  // namespace

CacheTopology CacheTopology::read(const std::string& root) {
    const std::string base = root + "/devices/system/cpu";
    std::string present;
    if (!read_line(base + "/present", present)) throw Error("failed to read " + base + "/present");
    const std::vector<int> cpus = core::parse_cpu_list(present);
    CacheTopology t;
    // level -> shared_cpu_list, per CPU
    std::vector<std::map<int, std::string>> levels;
    for (int cpu : cpus) {
        std::map<int, std::string> lv;
        const std::string dir = base + "/cpu" + std::to_string(cpu) + "/cache";
        for (int k = 0; k < 16; k++) {
            const std::string idx = dir + "/index" + std::to_string(k);
            std::string level, list, type;
            if (!read_line(idx + "/level", level) || !read_line(idx + "/shared_cpu_list", list)) continue;
            if (read_line(idx + "/type", type) && type == "Instruction") continue;
            int l = std::atoi(level.c_str());
            if (l >= 2) lv[l] = list;
            if (l > t.llc_level_) t.llc_level_ = l;
        }
        if (size_t(cpu) >= levels.size()) levels.resize(cpu + 1);
        levels[cpu] = std::move(lv);
    }
    t.l2_.resize(levels.size());
    t.llc_.resize(levels.size());
    for (size_t c = 0; c < levels.size(); c++) {
        auto l2 = levels[c].find(2);
        if (l2 != levels[c].end()) t.l2_[c] = l2->second;
        if (t.llc_level_ >= 2) {
            auto llc = levels[c].find(t.llc_level_);
            if (llc != levels[c].end()) t.llc_[c] = llc->second;
        }
    }
    return t;
}

bool CacheTopology::same(const std::vector<std::string>& lists, int a, int b) {
    if (a < 0 || b < 0 || size_t(a) >= lists.size() || size_t(b) >= lists.size()) return false;
    return !lists[a].empty() && lists[a] == lists[b];
}

}  // namespace perfprof::sched
