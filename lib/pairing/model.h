// The two-event model of multi-trace (SPEC §4.6): the events of the -e positions, the pairs
// they form, what the implementations (delay, pair, kmemprof, syscalls) share, and the
// interface they implement. profilers/multi_trace.cpp builds the model, feed.h brings the
// samples to pairer.h, which runs the keyed backup / find-previous algorithm (§4.6.3); each
// implementation lives in its own file here; the --detail timeline in timeline.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filter/expr.h"
#include "perf-prof/profiler.h"

namespace perfprof::stack {
class Printer;
}

namespace perfprof::pairing {

class Timeline;
class TimelineOut;

// One event of the -e lists.
struct TraceEvent {
    int index = -1;     // its planned event (Sample::event_index); -1 for a nested profiler
    int position = 0;   // which position (a -e with traced events), from 0; -1 when untraced
    std::string sys;    // "sched"; a nested profiler's name
    std::string name;   // "sched_wakeup"; "" for a nested profiler
    std::string alias;  // alias=
    bool untraced = false, trigger = false, stack = false;
    bool need_find_prev = false, need_backup = false;  // §4.6.1, before role= and the wake-up trick
    const EventSpec* spec = nullptr;                   // null for a nested profiler
    std::unique_ptr<filter::Program> key, role, printkey, size;  // null = not given

    std::string full() const { return name.empty() ? sys : sys + ":" + name; }
    // The name tables and heat-map files show: alias, else the name without "sys:".
    const std::string& display() const { return !alias.empty() ? alias : !name.empty() ? name : sys; }
};

// event1 → event2 of adjacent positions (and last → first with --cycle).
struct Pair {
    int id = 0;  // creation order
    const TraceEvent* ev1 = nullptr;
    const TraceEvent* ev2 = nullptr;
};

// Options and services every implementation reads. Built by the profiler before the
// implementation; lives as long as it.
struct Env {
    explicit Env(Context& c) : ctx(c) {}
    Context& ctx;
    std::vector<std::unique_ptr<TraceEvent>> events;  // every -e event, list order
    std::vector<Pair> pairs;                          // creation order

    uint64_t than = 0;       // --than / --only-than, in sample time units (ns, or TSC cycles); 0 = none
    uint64_t lower = 0;      // --lower, likewise
    bool only_than = false;  // --only-than
    bool perins = false;     // statistics per key
    bool tsc = false;        // times are TSC cycles: tables say kcyc
    std::string heatmap;     // --heatmap NAME, "" = none
    bool hist = false;       // --hist: a log2 histogram of each pair's latencies after the table
    int verbose = 0;

    // Key column (SPEC §4.6.2): with --perins, its title and width; the comm column when
    // attached to threads without key expressions (the key is then a thread id).
    std::string key_name = "CPU";
    int key_width = 3;
    bool comm_column = false;
    const filter::Program* printkey = nullptr;  // the first printkey= given, null = decimal

    stack::Printer* printer = nullptr;  // when an event records stacks
    Timeline* timeline = nullptr;       // --detail, else null
    // --timeline, else null
    TimelineOut* timeline_out = nullptr;

    // "{WALL(ev)} {M} {event line}" and its stack lines, on ctx.out(); a forwarded event is
    // printed by its profiler under the same head.
    void print_event(const Sample& s);
    // A pair beyond the threshold: its window with --detail (§4.6.7), else both events.
    void print_pair(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key);
    // The key cell of a --perins row, padded to key_width (printkey= when given).
    void append_key(uint64_t key, std::string& line);
    // Header cells for the key (and comm) columns, and their dashes; "" without --perins.
    std::string key_header() const;
    std::string key_dashes() const;
    // Appends what the threshold columns say for `n` of `calls` ("{n:>6} ({pct:>3}%)"), bold
    // red on a terminal when n > 0.
    void append_than(uint64_t n, uint64_t calls, std::string& line) const;
    // Time unit label of the tables: sample times / 1000 are us, or kcyc with TSC times.
    const char* unit() const { return tsc ? "kcyc" : "us"; }
    double in_units(uint64_t t) const { return double(t) / 1000.0; }
};

// Why a backed-up event1 is handed back unpaired.
enum class Remain {
    Exit,  // still pending at the end of the run
    Lost,  // events were lost after it: its event2 may be among them
    Freed,  // its task was freed (sched_process_free) before its event2: ends at `last`
};

// An implementation of the two-event analysis (--impl).
class Impl {
public:
    virtual ~Impl() = default;
    // `ev1` and `ev2` form pair `p` under `key`; ev1.time <= ev2.time.
    virtual void two(const Pair& p, const Sample& ev1, const Sample& ev2, uint64_t key) = 0;
    // A backed-up event1 that will never be paired; `last` is the newest time seen.
    virtual void remaining(const Sample& ev1, uint64_t key, Remain why, uint64_t last) {
        (void)ev1, (void)key, (void)why, (void)last;
    }
    // --timeline: the name of pair `p`'s slice into `name` (cleared first); false when this
    // implementation does not count the pair (no slice). By default "EVENT1 -> EVENT2".
    virtual bool slice_name(const Pair& p, const Sample& ev1, const Sample& ev2, std::string& name) const;
    // The periodic (-i) and final report; counters reset after printing.
    virtual void report() = 0;
    // After the final report: close files, print hints.
    virtual void finish() {}
};

// The implementations (their files); each throws Error::usage when the events do not suit it.
std::unique_ptr<Impl> make_delay(Env& env);
std::unique_ptr<Impl> make_pair(Env& env);
std::unique_ptr<Impl> make_kmemprof(Env& env);
std::unique_ptr<Impl> make_syscalls(Env& env);

}  // namespace perfprof::pairing
