#include "stack/flame_graph.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "perf-prof/error.h"
#include "stack/stack_printer.h"

namespace perfprof::stack {

FlameGraph::FlameGraph(const std::string& name) {
    if (name.empty()) {
        out_ = stdout;
        return;
    }
    struct stat st {};
    if (::stat(name.c_str(), &st) == 0 &&
        (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        path_ = name;
    } else {
        path_ = name + ".folded";
        regular_ = true;
        if (::access(path_.c_str(), F_OK) == 0) std::rename(path_.c_str(), (path_ + ".old").c_str());
    }
    out_ = std::fopen(path_.c_str(), regular_ ? "we" : "ae");
    if (!out_) throw Error::sys(errno, "cannot create the flame-graph file '" + path_ + "'");
    own_ = true;
}

FlameGraph::~FlameGraph() {
    if (own_ && out_) std::fclose(out_);
}

void FlameGraph::add_callchain(Printer& p, const uint64_t* ips, uint64_t nr, uint32_t pid,
                               std::string_view root, std::string& scratch) {
    scratch.clear();
    if (line_per_frame()) {
        if (!p.frame_lines(ips, nr, pid, scratch)) return;
        if (!root.empty()) (scratch += root) += '\n';
    } else {
        if (!root.empty()) (scratch += root) += ';';
        if (!p.fold(ips, nr, pid, scratch)) return;
    }
    add(scratch);
}

void FlameGraph::add(const std::string& stack) {
    if (line_per_frame()) {
        if (!stack.empty()) ++counts_[stack];
        return;
    }
    std::string key = stack;
    if (!key.empty() && key.back() == ';') key.pop_back();
    if (key.empty()) return;
    ++counts_[key];
}

void FlameGraph::flush(const std::string& prefix) {
    if (line_per_frame()) {
        // Frames innermost first, then the root, then the time entries, then the count.
        std::string time = prefix;
        for (char& c : time)
            if (c == ';') c = '\n';
        for (const auto& [stack, n] : counts_) {
            std::fputs(stack.c_str(), out_);
            std::fputs(time.c_str(), out_);
            std::fprintf(out_, "%llu\n", (unsigned long long)n);
        }
    } else {
        for (const auto& [stack, n] : counts_) {
            std::fputs(prefix.c_str(), out_);
            std::fputs(stack.c_str(), out_);
            std::fprintf(out_, " %llu\n", (unsigned long long)n);
        }
    }
    wrote_ |= !counts_.empty();
    counts_.clear();
    std::fflush(out_);
}

void FlameGraph::finish(const std::string& prefix) {
    const bool had = !counts_.empty() || wrote_;
    flush(prefix);
    if (regular_ && had) {
        const std::string name = path_.substr(0, path_.size() - 7);
        std::printf(
            "To generate the flame graph, running THIS shell command:\n\n  flamegraph.pl %s > %s.svg\n\n",
            path_.c_str(), name.c_str());
    }
}

std::string interval_prefix(int64_t realtime_ns) {
    time_t sec = static_cast<time_t>(realtime_ns / 1000000000);
    tm t{};
    localtime_r(&sec, &t);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d;%02d:%02d:%02d;", t.tm_year + 1900, t.tm_mon + 1,
                  t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec);
    return buf;
}

}  // namespace perfprof::stack
