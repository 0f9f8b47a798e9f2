// Nested pairing (SPEC-PROFILERS §P7, nested-trace): events that nest like function calls.
// Per key a stack of backed-up entries (newest last; several of one list may coexist). An entry
// reports who called it (the newest open entry of the key, or none: a root call); a return of
// list k closes the newest open entry of list k, which gives the pair's latency.
//
// CallTree: the tree of lists those calls build (impls call and call-delay), with the latency
// statistics of each list, printed as §P7's tree or call-delay table.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "output/latency.h"
#include "perf-prof/sample.h"
#include "perf/sample_copy.h"

namespace perfprof::pairing {

class NestedStacks {
public:
    struct Sink {
        virtual ~Sink() = default;
        // An entry of `list` opened while `caller` (a list, -1 = none) was the newest open one.
        virtual void called(int caller, int list) = 0;
        // The return `ret` of `list` closed `entry` (entry.time <= ret.time).
        virtual void returned(int list, const Sample& entry, const Sample& ret, uint64_t key) = 0;
    };
    explicit NestedStacks(Sink& sink) : sink_(sink) {}

    void entry(int list, const Sample& s, uint64_t key);
    void exit(int list, const Sample& s, uint64_t key);
    // Events were lost: every open entry goes (its return may be among them).
    void clear() { stacks_.clear(); }
    size_t open() const;

private:
    struct Open {
        int list;
        perf::SampleCopy copy;
    };
    Sink& sink_;
    std::unordered_map<uint64_t, std::vector<Open>> stacks_;
};

class CallTree {
public:
    // `names`: the display name of each list's entry event.
    explicit CallTree(std::vector<std::string> names);

    // The tree lines changed by a move are printed first, on `out` (std::string appended).
    void called(int caller, int list, std::string& out);
    void latency(int list, uint64_t t, uint64_t threshold) { nodes_[size_t(list)].dist.add(t, threshold); }
    bool dirty() const { return calls_ > 0; }

    // impl call: the tree ("name[ R]", children under "  |-"); resets the call counter.
    std::string tree();
    // impl call-delay: the table of §P7 (no wall line); resets the statistics and the counter.
    std::string table(const char* unit);

private:
    struct Node {
        int parent = -1;  // -1: a root (or not placed yet)
        bool placed = false, recursive = false;
        output::LatencyDist dist;
    };
    bool ancestor(int a, int of) const;  // a is `of` or one of its ancestors
    int depth(int n) const;
    template <class Line>
    void walk(int parent, int depth, Line&& line) const;
    static std::string indent(int depth);

    std::vector<std::string> names_;
    std::vector<Node> nodes_;
    uint64_t calls_ = 0;
};

}  // namespace perfprof::pairing
