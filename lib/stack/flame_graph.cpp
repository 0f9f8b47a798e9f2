#include "stack/flame_graph.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include "core/text.h"
#include "core/time.h"
#include "flamegraph/flame_svg.h"
#include "flamegraph/svg.h"
#include "perf-prof/error.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"

namespace perfprof::stack {

namespace {

// Remembers the kind of each folded frame ("a;b;c;" and one kind character per frame) that is
// not the program's own code: user code is what a name without a note is drawn as.
void note_kinds(std::string_view frames, std::string_view kinds,
                std::unordered_map<std::string, flamegraph::FrameKind>& out) {
    size_t pos = 0;
    for (char k : kinds) {
        const size_t end = frames.find(';', pos);
        if (end == std::string_view::npos) return;
        const auto kind = static_cast<flamegraph::FrameKind>(k);
        if (kind != flamegraph::FrameKind::User)
            out.try_emplace(std::string(frames.substr(pos, end - pos)), kind);
        pos = end + 1;
    }
}

// "2026-11-24 10:00:01" of a CLOCK_REALTIME time, local zone.
std::string local_time(int64_t realtime_ns) {
    const time_t sec = static_cast<time_t>(realtime_ns / 1000000000);
    tm t{};
    localtime_r(&sec, &t);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &t);
    return buf;
}

}  // namespace

FlameGraph::FlameGraph(Printer* printer, const std::string& name, std::string count_name)
    : count_name_(std::move(count_name)), since_(core::realtime_now_ns()), printer_(printer) {
    open_output(name);
    // The symbolizer, not the printer, is asked at destruction: it outlives the profiler's
    // members, whatever their order.
    if (printer_) symbols_ = &printer_->symbolizer();
    if (symbols_) symbols_->add_observer(this);
}

void FlameGraph::open_output(const std::string& name) {
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
        base_ = name;
        regular_ = true;
        if (::access(path_.c_str(), F_OK) == 0) std::rename(path_.c_str(), (path_ + ".old").c_str());
    }
    out_ = std::fopen(path_.c_str(), regular_ ? "we" : "ae");
    if (!out_) throw Error::sys(errno, "cannot create the flame-graph file '" + path_ + "'");
    own_ = true;
}

FlameGraph::~FlameGraph() {
    if (symbols_) symbols_->remove_observer(this);
    if (own_ && out_) std::fclose(out_);
}

void FlameGraph::before_forget(uint32_t tgid) {
    if (pending(tgid)) fold_pending();
}

void FlameGraph::add_callchain(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string_view root, uint64_t n) {
    if (pending_.add(*printer_, ips, nr, pid, root, n)) fold_pending();
}

void FlameGraph::fold_pending() {
    pending_.drain([&](uint32_t pid, std::string_view root, std::span<const uint64_t> ips, uint64_t n) {
        text_.clear();
        if (line_per_frame()) {
            if (!printer_->frame_lines(ips.data(), ips.size(), pid, text_)) return;
            if (!root.empty()) (text_ += root) += '\n';
        } else {
            if (!root.empty()) (text_ += root) += ';';
            const size_t first = text_.size();
            frame_kinds_.clear();
            if (!printer_->fold(ips.data(), ips.size(), pid, text_, regular_ ? &frame_kinds_ : nullptr))
                return;
            note_kinds(std::string_view(text_).substr(first), frame_kinds_, kinds_);
        }
        add(text_, n);
    });
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
    std::fflush(out_);
    write_svg(prefix);
    counts_.clear();
    since_ = core::realtime_now_ns();
}

void FlameGraph::write_svg(const std::string& prefix) {
    // A whole run always gets its picture; an interval only when it holds stacks.
    if (!regular_ || (!prefix.empty() && counts_.empty())) return;
    flamegraph::FoldedStacks stacks;
    for (const auto& [name, kind] : kinds_) stacks.set_kind(name, kind);
    for (const auto& [stack, n] : counts_) stacks.add(stack, n);
    flamegraph::FlameOptions o;
    o.count_name = count_name_;
    char span[64];
    std::snprintf(span, sizeof span, ", %.1f s", double(core::realtime_now_ns() - since_) / 1e9);
    o.subtitle = core::command_line() + "  \u00b7  " + local_time(since_) + span;
    std::string path = base_;
    if (!prefix.empty()) {
        // One picture per interval: NAME-YYYYMMDD-HHMMSS.svg, then -2, -3, ... for further
        // intervals started in the same second.
        std::string stamp;
        for (char c : prefix)
            if (c >= '0' && c <= '9') stamp += c;
        if (stamp.size() > 8) stamp.insert(8, "-");
        same_second_ = stamp == last_stamp_ ? same_second_ + 1 : 1;
        last_stamp_ = stamp;
        path += "-" + stamp + (same_second_ > 1 ? "-" + std::to_string(same_second_) : "");
    }
    path += ".svg";
    flamegraph::write_file(
        path, [&](const flamegraph::TextSink& sink) { flamegraph::render_flame_graph(stacks, o, sink); });
    last_svg_ = path;
    svgs_++;
}

void FlameGraph::finish(const std::string& prefix) {
    fold_pending();
    const bool had = !counts_.empty() || wrote_;
    flush(prefix);
    if (regular_ && had) {
        if (svgs_ == 1)
            std::printf("Flame graph: %s (folded stacks: %s)\n", last_svg_.c_str(), path_.c_str());
        else
            std::printf("Flame graphs: %d pictures %s-*.svg, one per interval (folded stacks: %s)\n", svgs_,
                        base_.c_str(), path_.c_str());
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
