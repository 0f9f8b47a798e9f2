#include "serve/process_info.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "core/text.h"
#include "flamegraph/svg.h"
#include "perf/proc_tasks.h"
#include "sym/object.h"

namespace perfprof::serve {

namespace {

// HTML text and attribute values: the SVG writer's XML escaping serves both.
std::string html_escape(std::string_view s) {
    std::string out;
    flamegraph::append_escaped(out, s);
    return out;
}

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const std::string& a : args) s += (s.empty() ? "" : " ") + a;
    return s;
}

}  // namespace

ProcessInfo describe_process(int pid, bool build_id) {
    ProcessInfo p;
    p.pid = pid;
    const std::string dir = "/proc/" + std::to_string(pid);
    p.alive = perf::task_alive(pid);
    p.comm = core::read_file_or_empty(dir + "/comm");
    while (!p.comm.empty() && p.comm.back() == '\n') p.comm.pop_back();
    char buf[PATH_MAX];
    const ssize_t n = ::readlink((dir + "/exe").c_str(), buf, sizeof buf - 1);
    if (n > 0) p.exe.assign(buf, size_t(n));
    if (build_id && !p.exe.empty()) p.build_id = sym::get_object(p.exe, dir + "/exe")->build_id();
    const std::string cmd = core::read_file_or_empty(dir + "/cmdline");
    for (size_t at = 0; at < cmd.size();) {
        size_t end = cmd.find('\0', at);
        if (end == std::string::npos) end = cmd.size();
        p.cmdline.push_back(cmd.substr(at, end - at));
        at = end + 1;
    }
    return p;
}

std::vector<int> all_processes() {
    std::vector<int> pids;
    if (DIR* d = ::opendir("/proc")) {
        while (const dirent* e = ::readdir(d)) {
            char* end;
            const long v = std::strtol(e->d_name, &end, 10);
            if (*end == '\0' && v > 0) pids.push_back(int(v));
        }
        ::closedir(d);
    }
    std::sort(pids.begin(), pids.end());
    return pids;
}

std::string index_page(const std::vector<ProcessInfo>& targets, const std::string& prefix) {
    std::string h =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>perf-prof serve</title></head><body>\n"
        "<h1>perf-prof "
        "serve</h1>\n<table>\n<tr><th>pid</th><th>comm</th><th>command</th><th>profiles</th></tr>\n";
    for (const ProcessInfo& p : targets) {
        const std::string base = html_escape(prefix) + "/pid/" + std::to_string(p.pid);
        h += "<tr><td>" + std::to_string(p.pid) + "</td><td>" + html_escape(p.comm) + "</td><td>" +
             html_escape(joined(p.cmdline)) + "</td><td>";
        for (const char* e : {"/debug/pprof/profile?seconds=10", "/debug/pprof/heap",
                              "/pprof/profile?seconds=10", "/pprof/heap", "/pprof/growth", "/pprof/cmdline"})
            h += "<a href=\"" + base + e + "\">" + e + "</a> ";
        h += "</td></tr>\n";
    }
    h += "</table>\n</body></html>\n";
    return h;
}

std::string go_index_page(const ProcessInfo& target, const std::string& base) {
    const std::string b = html_escape(base);
    std::string h =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>/debug/pprof/</title></head><body>\n";
    h += "<p>Profiles of process " + std::to_string(target.pid) + " (" + html_escape(target.comm) +
         "):</p>\n<ul>\n";
    for (const char* e : {"allocs", "block?seconds=30", "heap", "mutex?seconds=30", "profile?seconds=30",
                          "symbol", "cmdline"})
        h += std::string("<li><a href=\"") + b + "/debug/pprof/" + e + "\">" + e + "</a></li>\n";
    h += "</ul>\n</body></html>\n";
    return h;
}

}  // namespace perfprof::serve
