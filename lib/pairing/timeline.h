// multi-trace --detail (SPEC §4.6.7): every sample kept in time order until no output window
// can need it, and the window printed around a pair beyond the threshold: the events before
// event1 (-TIME), between the two (hide<TIME collapses runs), after event2 (+TIME), filtered
// by the samecpu / samepid / sametid / samekey tests, with the 27-column titles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "pairing/detail_spec.h"
#include "pairing/model.h"

namespace perfprof::pairing {

class Timeline {
public:
    struct Node;

    // `env` prints (Env::print_event for the event lines, its printer for stacks). Times in
    // `spec` are in sample time units.
    Timeline(Env& env, const DetailSpec& spec);
    ~Timeline();
    Timeline(const Timeline&) = delete;
    Timeline& operator=(const Timeline&) = delete;

    // Every sample, in delivery order (time non-decreasing), with its key and whether its
    // event has a key expression (samekey compares only like with like).
    Node* push(const Sample& s, uint64_t key, bool keyed);
    // The oldest node not handed out yet whose time is at least `after` older than the
    // newest pushed (any, with `all`), marked handed out; null when there is none. The profiler
    // pairs it then, so that the events after event2 are on the timeline when it prints.
    Node* next_ready(bool all);
    static Sample sample(const Node* n);
    static uint64_t key(const Node* n);

    // A backed-up event1 pins its node, and with it the -TIME before it and everything
    // after it, until unpinned (paired, replaced, lost or remaining at exit).
    void pin(Node* n);
    void unpin(Node* n);
    // Frees the nodes no window can need: handed out, not pinned, and older than the oldest
    // pinned node (else the oldest not handed out) minus -TIME.
    void release();

    // The output block of §4.6.7 for the pair (ev1, ev2) with `key`; both are samples of
    // nodes still on the timeline (ev1 pinned, ev2 the node being paired).
    void print_window(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key);
    // §4.6.6 lost-event remainder: event1 and the events after it up to `last`, then
    // "| >= {last - t1:>12.3f} us, event2 may be lost."
    void print_lost(const Sample& ev1, uint64_t key, uint64_t last);

    size_t nodes() const;  // kept now
    size_t bytes() const;  // their memory
    size_t peak_nodes() const;

private:
    struct State;
    std::unique_ptr<State> st_;
};

}  // namespace perfprof::pairing
