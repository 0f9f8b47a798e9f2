// Nested pairing and its call tree (SPEC-PROFILERS §P7); see nested.h.
#include "pairing/nested.h"

#include <algorithm>
#include <cstdio>

#include "core/format.h"

namespace perfprof::pairing {

void NestedStacks::entry(int list, const Sample& s, uint64_t key) {
    std::vector<Open>& st = stacks_[key];
    sink_.called(st.empty() ? -1 : st.back().list, list);
    st.push_back({list, {}});
    st.back().copy.assign(s);
}

void NestedStacks::exit(int list, const Sample& s, uint64_t key) {
    auto it = stacks_.find(key);
    if (it == stacks_.end()) return;
    std::vector<Open>& st = it->second;
    for (size_t i = st.size(); i-- > 0;) {
        if (st[i].list != list) continue;
        const Sample e = st[i].copy.sample();
        if (e.time <= s.time) sink_.returned(list, e, s, key);
        st.erase(st.begin() + std::ptrdiff_t(i));
        break;
    }
    if (st.empty()) stacks_.erase(it);
}

size_t NestedStacks::open() const {
    size_t n = 0;
    for (const auto& [k, st] : stacks_) n += st.size();
    return n;
}

CallTree::CallTree(std::vector<std::string> names) : names_(std::move(names)), nodes_(names_.size()) {}

bool CallTree::ancestor(int a, int of) const {
    for (int n = of, guard = 0; n >= 0 && guard <= int(nodes_.size()); n = nodes_[size_t(n)].parent, guard++)
        if (n == a) return true;
    return false;
}

int CallTree::depth(int n) const {
    int d = 0;
    for (int p = nodes_[size_t(n)].parent; p >= 0 && d <= int(nodes_.size()); p = nodes_[size_t(p)].parent) d++;
    return d;
}

void CallTree::called(int caller, int list, std::string& out) {
    calls_++;
    Node& n = nodes_[size_t(list)];
    if (caller >= 0 && ancestor(list, caller)) {
        // Recursion: the caller is the list itself or one of its descendants; not re-linked.
        nodes_[size_t(caller)].recursive = true;
        return;
    }
    if (n.placed && n.parent != caller && caller >= 0) {
        out += tree();  // the tree as it was, before the move
        calls_ = 1;
    }
    if (!n.placed || caller >= 0) n.parent = caller;
    n.placed = true;
}

std::string CallTree::indent(int depth) {
    if (depth <= 0) return {};
    std::string s;
    for (int i = 1; i < depth; i++) s += "  | ";
    return s + "  |-";
}

template <class Line>
void CallTree::walk(int parent, int d, Line&& line) const {
    for (size_t i = 0; i < nodes_.size(); i++) {
        const Node& n = nodes_[i];
        if (!n.placed || n.parent != parent) continue;
        line(int(i), d);
        if (d <= int(nodes_.size())) walk(int(i), d + 1, line);
    }
}

std::string CallTree::tree() {
    std::string out;
    walk(-1, 0, [&](int i, int d) {
        out += indent(d) + names_[size_t(i)] + (nodes_[size_t(i)].recursive ? " R" : "") + "\n";
    });
    calls_ = 0;
    return out;
}

std::string CallTree::table(const char* unit) {
    size_t l1 = 5;
    int max_depth = 0;
    for (size_t i = 0; i < nodes_.size(); i++) {
        l1 = std::max(l1, names_[i].size());
        if (nodes_[i].placed) max_depth = std::max(max_depth, depth(int(i)));
    }
    const size_t fl = std::max<size_t>(13, size_t(4 * max_depth) + l1);
    std::string out;
    core::append_right(out, "function call", fl);
    out += " R    calls";
    for (const char* c : {"total", "min", "p50", "p95", "p99", "max"}) {
        const std::string h = std::string(c) + "(" + unit + ")";
        out += ' ';
        core::append_right(out, h, std::string(c) == "total" ? 16 : 12);
    }
    out += '\n' + std::string(fl, '-') + " - -------- ---------------- ------------ ------------ ------------ "
                                        "------------ ------------\n";
    walk(-1, 0, [&](int i, int d) {
        const Node& n = nodes_[size_t(i)];
        const std::string in = indent(d);
        out += in;
        core::append_left(out, names_[size_t(i)], fl - in.size());
        out += n.recursive ? " R" : "  ";
        const output::LatencyDist& s = n.dist;
        if (s.calls) {
            char buf[160];
            std::snprintf(buf, sizeof buf, " %8llu %16.3f %12.3f %12.3f %12.3f %12.3f %12.3f",
                          (unsigned long long)s.calls, double(s.total) / 1000.0, double(s.min) / 1000.0,
                          s.sketch.quantile(0.5) / 1000.0, s.sketch.quantile(0.95) / 1000.0,
                          s.sketch.quantile(0.99) / 1000.0, double(s.max) / 1000.0);
            out += buf;
        }
        out += '\n';
    });
    for (Node& n : nodes_) n.dist.clear();
    calls_ = 0;
    return out;
}

}  // namespace perfprof::pairing
