#include "flamegraph/folded.h"

#include <algorithm>
#include <charconv>

namespace perfprof::flamegraph {

namespace {

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// "2026-11-24" and "14:05:00": the time prefix of interval-mode files (SPEC §5.6).
bool time_frame(std::string_view s) {
    auto shape = [&](std::string_view pattern) {
        return s.size() == pattern.size() &&
               std::equal(s.begin(), s.end(), pattern.begin(),
                          [](char c, char p) { return p == 'd' ? c >= '0' && c <= '9' : c == p; });
    };
    return shape("dddd-dd-dd") || shape("dd:dd:dd");
}

// The kind a bare name shows by itself.
FrameKind kind_of_name(std::string_view s) {
    if (s == "-" || s == "--" || time_frame(s)) return FrameKind::Separator;
    if (s == "[unknown]" || s == "Unknown" || s == "[truncated]") return FrameKind::Unknown;
    if (s.starts_with("[off-cpu")) return FrameKind::OffCpu;
    if (s.size() > 2 && s.front() == '[' && s.back() == ']' && s.find("+0x") != std::string_view::npos)
        return FrameKind::Fallback;
    return FrameKind::User;
}

}  // namespace

std::string_view kind_annotation(FrameKind kind) {
    switch (kind) {
        case FrameKind::Kernel:
            return "_[k]";
        case FrameKind::Jit:
            return "_[j]";
        case FrameKind::Inlined:
            return "_[i]";
        case FrameKind::Library:
            return "_[l]";
        default:
            return {};
    }
}

// Hints are given before the stacks that use them are added.
void FoldedStacks::set_kind(std::string_view name, FrameKind kind) {
    hints_.insert_or_assign(std::string(name), kind);
}

uint32_t FoldedStacks::intern(std::string_view raw) {
    if (auto it = ids_.find(raw); it != ids_.end()) return it->second;
    std::string_view name = raw;
    FrameKind kind = FrameKind::User;
    bool annotated = false;
    if (name.size() > 4 && name.substr(name.size() - 4, 2) == "_[" && name.back() == ']') {
        annotated = true;
        switch (name[name.size() - 2]) {
            case 'k':
            case 'w':
                kind = FrameKind::Kernel;
                break;
            case 'j':
                kind = FrameKind::Jit;
                break;
            case 'i':
                kind = FrameKind::Inlined;
                break;
            case 'l':
                kind = FrameKind::Library;
                break;
            default:
                annotated = false;
        }
        if (annotated) name.remove_suffix(4);
    }
    if (!annotated) {
        auto h = hints_.find(std::string(name));
        kind = h != hints_.end() ? h->second : kind_of_name(name);
    }
    const auto id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    raw_.emplace_back(raw);
    kinds_.push_back(kind);
    ids_.emplace(raw_.back(), id);
    return id;
}

void FoldedStacks::add(std::string_view stack, uint64_t n, uint64_t before) {
    const size_t first = frames_.size();
    size_t pos = 0;
    while (pos <= stack.size()) {
        size_t end = stack.find(';', pos);
        if (end == std::string_view::npos) end = stack.size();
        if (end > pos) frames_.push_back(intern(stack.substr(pos, end - pos)));
        pos = end + 1;
    }
    const size_t size = frames_.size() - first;
    if (size == 0 || size > UINT32_MAX || (n == 0 && before == 0)) {
        frames_.resize(first);
        return;
    }
    if (before && !differential_) {
        differential_ = true;
        before_.resize(stacks_.size(), 0);
    }
    stacks_.push_back({first, uint32_t(size), n});
    if (differential_) before_.push_back(before);
    total_ += n;
    before_total_ += before;
}

void FoldedReader::feed(std::string_view text) {
    if (!partial_.empty()) {
        const size_t nl = text.find('\n');
        partial_.append(text.substr(0, nl));
        if (nl == std::string_view::npos) return;
        line(partial_);
        partial_.clear();
        text.remove_prefix(nl + 1);
    }
    size_t pos = 0;
    for (size_t nl; (nl = text.find('\n', pos)) != std::string_view::npos; pos = nl + 1)
        line(text.substr(pos, nl - pos));
    partial_.assign(text.substr(pos));
}

ParseReport FoldedReader::finish() {
    if (!partial_.empty()) line(partial_);
    partial_.clear();
    return report_;
}

void FoldedReader::line(std::string_view line) {
    ParseReport& r = report_;
    line_no_++;
    auto bad = [&](const char* why) {
        if (r.bad++ == 0) {
            r.first_bad = line_no_;
            r.why = why;
        }
    };
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.remove_suffix(1);
    if (line.empty()) return;
    const size_t sp = line.find_last_of(" \t");
    if (sp == std::string_view::npos) return bad("no count after the stack");
    std::string_view count = line.substr(sp + 1), stack = line.substr(0, sp), first;
    // A differential pair "STACK BEFORE AFTER": the second count is drawn.
    const size_t sp2 = stack.find_last_of(" \t");
    if (sp2 != std::string_view::npos && all_digits(stack.substr(sp2 + 1))) {
        first = stack.substr(sp2 + 1);
        stack = stack.substr(0, sp2);
    }
    while (!stack.empty() && (stack.back() == ' ' || stack.back() == '\t')) stack.remove_suffix(1);
    if (!all_digits(count)) return bad("the count is not a whole number");
    if (feed_ == Feed::Pairs && first.empty()) return bad("expected two counts, before and after");
    uint64_t n = 0, before = 0;
    if (std::from_chars(count.data(), count.data() + count.size(), n).ec != std::errc() ||
        (feed_ == Feed::Pairs &&
         std::from_chars(first.data(), first.data() + first.size(), before).ec != std::errc()))
        return bad("the count is too large");
    if (feed_ == Feed::Before) std::swap(n, before);
    if (out_.total() + n < out_.total() || out_.before_total() + before < out_.before_total())
        return bad("the count is too large");
    if (stack.find_first_not_of(';') == std::string_view::npos) return bad("the stack is empty");
    r.lines++;
    out_.add(stack, n, before);
}

ParseReport parse_folded(std::string_view text, FoldedStacks& out, Feed feed) {
    FoldedReader r(out, feed);
    r.feed(text);
    return r.finish();
}

}  // namespace perfprof::flamegraph
