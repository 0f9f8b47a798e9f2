#include "flamegraph/folded.h"

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
        if (s.size() != pattern.size()) return false;
        for (size_t i = 0; i < s.size(); i++)
            if (pattern[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pattern[i]) return false;
        return true;
    };
    return shape("dddd-dd-dd") || shape("dd:dd:dd");
}

// The kind a bare name shows by itself.
FrameKind kind_of_name(std::string_view s) {
    if (s == "-" || s == "--" || time_frame(s)) return FrameKind::Separator;
    if (s == "[unknown]" || s == "Unknown") return FrameKind::Unknown;
    if (s.size() > 2 && s.front() == '[' && s.back() == ']' && s.find("+0x") != std::string_view::npos)
        return FrameKind::Fallback;
    return FrameKind::User;
}

}  // namespace

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

void FoldedStacks::add(std::string_view stack, uint64_t n) {
    scratch_.clear();
    size_t pos = 0;
    while (pos <= stack.size()) {
        size_t end = stack.find(';', pos);
        if (end == std::string_view::npos) end = stack.size();
        if (end > pos) scratch_.push_back(intern(stack.substr(pos, end - pos)));
        pos = end + 1;
    }
    if (scratch_.empty() || n == 0) return;
    stacks_.push_back({scratch_, n});
    total_ += n;
}

ParseReport parse_folded(std::string_view text, FoldedStacks& out) {
    ParseReport r;
    size_t line_no = 0, pos = 0;
    auto bad = [&](const char* why) {
        if (r.bad++ == 0) {
            r.first_bad = line_no;
            r.why = why;
        }
    };
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        pos = nl + 1;
        line_no++;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
            line.remove_suffix(1);
        if (line.empty()) continue;
        const size_t sp = line.find_last_of(" \t");
        if (sp == std::string_view::npos) {
            bad("no count after the stack");
            continue;
        }
        std::string_view count = line.substr(sp + 1), stack = line.substr(0, sp);
        // A differential pair "STACK BEFORE AFTER": the second count is drawn.
        const size_t sp2 = stack.find_last_of(" \t");
        if (sp2 != std::string_view::npos && all_digits(stack.substr(sp2 + 1))) stack = stack.substr(0, sp2);
        while (!stack.empty() && (stack.back() == ' ' || stack.back() == '\t')) stack.remove_suffix(1);
        uint64_t n = 0;
        if (!all_digits(count)) {
            bad("the count is not a whole number");
            continue;
        }
        if (std::from_chars(count.data(), count.data() + count.size(), n).ec != std::errc() ||
            out.total() + n < out.total()) {
            bad("the count is too large");
            continue;
        }
        if (stack.find_first_not_of(';') == std::string_view::npos) {
            bad("the stack is empty");
            continue;
        }
        r.lines++;
        out.add(stack, n);
    }
    return r;
}

}  // namespace perfprof::flamegraph
