#include "perf/proc_tasks.h"

#include <dirent.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/fd.h"
#include "core/text.h"

namespace perfprof::perf {

std::vector<int> tasks_of(int pid) {
    std::vector<int> tids;
    core::CPtr<DIR, closedir> dir(opendir(("/proc/" + std::to_string(pid) + "/task").c_str()));
    if (!dir) return tids;
    while (dirent* e = readdir(dir.get()))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
    std::sort(tids.begin(), tids.end());
    return tids;
}

char task_state(int tid) {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(tid) + "/stat").c_str(), "re");
    if (!f) return 0;
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // The state follows the name, which is in parentheses and may hold any character.
    const char* paren = std::strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : '\0';
}

int tgid_of(int tid) {
    uint64_t tgid = 0;
    if (!core::parse_dec(core::status_field("/proc/" + std::to_string(tid) + "/status", "Tgid:"), tgid) ||
        tgid > INT_MAX)
        return -1;
    return static_cast<int>(tgid);
}

bool task_alive(int tid) {
    return alive_state(task_state(tid));
}

}  // namespace perfprof::perf
