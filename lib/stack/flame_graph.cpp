#include "stack/flame_graph.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "perf-prof/error.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::stack {

namespace {

// The live flame graphs, for forget_process().
std::vector<FlameGraph*>& graphs() {
    static std::vector<FlameGraph*> all;
    return all;
}

// Bounds the pending chains kept between writes (each ~100 bytes and a map node).
constexpr size_t kMaxPending = size_t(1) << 16;

}  // namespace

FlameGraph::FlameGraph(const std::string& name) {
    if (name.empty()) {
        out_ = stdout;
        graphs().push_back(this);
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
    graphs().push_back(this);
}

FlameGraph::~FlameGraph() {
    auto& all = graphs();
    all.erase(std::remove(all.begin(), all.end(), this), all.end());
    if (own_ && out_) std::fclose(out_);
}

void forget_process(uint32_t tgid) {
    shared_syms().freeze(int(tgid));
    for (FlameGraph* g : graphs())
        if (g->pending(tgid)) g->fold_pending();
    PprofStacks::forget_process(tgid);
    shared_syms().drop(int(tgid));
}

void FlameGraph::add_callchain(Printer& p, const uint64_t* ips, uint64_t nr, uint32_t pid,
                               std::string_view root, std::string& scratch) {
    printer_ = &p;
    const uint32_t root_len = static_cast<uint32_t>(root.size());
    scratch.resize(8 + root.size() + nr * sizeof(uint64_t));
    char* k = scratch.data();
    std::memcpy(k, &pid, 4);
    std::memcpy(k + 4, &root_len, 4);
    std::memcpy(k + 8, root.data(), root.size());
    std::memcpy(k + 8 + root.size(), ips, nr * sizeof(uint64_t));
    auto [it, fresh] = raw_.try_emplace(scratch, 0);
    ++it->second;
    if (fresh) {
        // The first pending chain of this process: its maps are read now, while it lives.
        if (raw_pids_.insert(pid).second) p.prepare(pid);
        if (raw_.size() >= kMaxPending) fold_pending();
    }
}

void FlameGraph::fold_pending() {
    std::vector<uint64_t> ips;
    for (const auto& [key, n] : raw_) {
        uint32_t pid, root_len;
        std::memcpy(&pid, key.data(), 4);
        std::memcpy(&root_len, key.data() + 4, 4);
        const std::string_view root(key.data() + 8, root_len);
        ips.resize((key.size() - 8 - root_len) / sizeof(uint64_t));
        std::memcpy(ips.data(), key.data() + 8 + root_len, ips.size() * sizeof(uint64_t));
        text_.clear();
        if (line_per_frame()) {
            if (!printer_->frame_lines(ips.data(), ips.size(), pid, text_)) continue;
            if (!root.empty()) (text_ += root) += '\n';
        } else {
            if (!root.empty()) (text_ += root) += ';';
            if (!printer_->fold(ips.data(), ips.size(), pid, text_)) continue;
        }
        add(text_, n);
    }
    raw_.clear();
    raw_pids_.clear();
}

void FlameGraph::add(const std::string& stack, uint64_t n) {
    if (line_per_frame()) {
        if (!stack.empty()) counts_[stack] += n;
        return;
    }
    std::string_view key = stack;
    if (!key.empty() && key.back() == ';') key.remove_suffix(1);
    if (key.empty()) return;
    counts_[std::string(key)] += n;
}

void FlameGraph::flush(const std::string& prefix) {
    fold_pending();
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
    fold_pending();
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
