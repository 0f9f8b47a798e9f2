// Driver: multi-trace's machinery (SPEC §4.6), shared by multi-trace and its derivatives
// (rundelay, syscalls, kmemprof: SPEC-PROFILERS §P4-§P6). It plans the -e lists (positions,
// keys, outputs), builds the Pairer, the Feed and the implementation, and drives them with the
// samples. A profiler file configures it with a Preset: a fixed implementation, default pages,
// forced ordering, automatic keys and kernel filters, an attach rewrite, extra events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "event/resolve.h"
#include "pairing/feed.h"
#include "pairing/model.h"
#include "pairing/pairer.h"
#include "pairing/timeline.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"

namespace perfprof::stack {
class Printer;
}

namespace perfprof::pairing {

// The options of multi-trace (SPEC §1.5); a derivative takes a subset of their rows.
struct Settings final : ProfilerOptions {
    std::string key;                    // -k: key of the events without key=
    std::string impl = "delay";         // --impl
    bool impl_given = false;            // --impl was on the command line
    uint64_t than_ns = 0;               // --than / --only-than (the last one sets the value)
    bool only_than = false;             // --only-than
    uint64_t lower_ns = 0;              // --lower
    std::optional<std::string> detail;  // --detail[=LIST]
    std::string heatmap;                // --heatmap NAME
    bool cycle = false;                 // --cycle
    bool hist = false;                  // --hist
};

// The option rows (their setters validate); a profiler lists those it takes.
namespace rows {
extern const OptionRow key, impl, than, only_than, lower, detail, heatmap, cycle, hist;
}

// One event of a -e list, as a preset sees it when planning its automatic key and filter.
struct AutoEvent {
    const event::Resolved& r;  // the resolved event (sys, name, user filter, attributes)
    int list;                  // which -e, from 0
};

struct Preset {
    std::string name = "multi-trace";  // messages and help
    std::string impl;                  // fixed implementation; "" = --impl
    int pages = 0;                     // ring pages a CPU; 0 = 256 (512 with stacks)
    bool order = false;                // forces --order
    bool system_wide = false;          // attach rewrite: all CPUs, threads kept for filters
    // Automatic key expression of an event ("" = none; it wins over -k and key=).
    std::function<std::string(const AutoEvent&)> auto_key;
    // Automatic kernel filter (nullopt = leave the user's filter); -v echoes each.
    std::function<std::optional<std::string>(const AutoEvent&)> auto_filter;
    // After every list is planned: a derivative checks what it found (Error::usage).
    std::function<void()> check;
    // --perins key column (overrides): title, width, comm column.
    std::string key_name;
    int key_width = 0;
    bool comm_column = false;
    // The keys are thread ids (pid, next_pid, common_pid): --timeline puts each pair on its
    // thread's track rather than a "key N" one.
    bool thread_keys = false;
    // Extra events planned after the lists (sys, name), and what their samples do.
    std::vector<std::pair<std::string, std::string>> extra;
    std::function<void(const Sample&, const EventSpec&)> on_extra;
};

class Driver {
public:
    explicit Driver(Context& ctx);
    ~Driver();

    EventPlan plan(Preset preset);
    void sample(const Sample& s) noexcept;
    void lost(const LostRange& l) noexcept { feed_->lost(l); }
    void interval() { impl_->report(); }
    void finish();
    void sigusr1();

    // The pending event1 of `key` ends without its event2 (a task freed inside a syscall).
    void close(uint64_t key, uint64_t time) { pairer_->close(key, time); }
    Context& ctx() { return ctx_; }

private:
    struct Planned;
    void choose_impl(const Options& opt, const Settings& own);
    void plan_list(const Options& opt, const Settings& own, size_t list, EventPlan& p, Planned& planned);
    void plan_event(const Options& opt, const Settings& own, event::Resolved& r, size_t list, TraceEvent& te,
                    EventPlan& p, Planned& planned);
    void set_keys(const Options& opt, const Settings& own, const EventPlan& p, bool key_exprs);
    void set_outputs(const Options& opt, const Settings& own, bool stacks);
    uint64_t to_units(uint64_t ns) const;
    std::unique_ptr<Impl> make_impl();
    const TraceEvent* event_of(const Sample& s) const;
    uint64_t key_of(const TraceEvent& te, const Sample& s) const;

    Context& ctx_;
    Env env_;
    Preset preset_;
    std::string impl_name_;
    bool cycle_ = false;
    int verbose_ = 0;
    bool keyed_ = false, by_thread_ = false;
    std::string first_key_;
    std::unique_ptr<filter::Program> printkey_;
    std::vector<TraceEvent*> by_index_;  // per planned event of the lists
    std::vector<TraceEvent*> nested_;    // nested profilers, plan order
    std::vector<EventSpec> extra_;       // copies of the extra events' specs
    size_t extra_from_ = 0;              // planned index of the first extra event
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<Timeline> timeline_;
    std::unique_ptr<Impl> impl_;
    std::unique_ptr<Pairer> pairer_;
    std::unique_ptr<Feed> feed_;
    uint64_t horizon_ = 0;  // --detail: how long an event1 may hold the timeline
};

// multi-trace or a derivative: preset() configures the Driver, which does the rest.
class PresetProfiler : public Profiler {
public:
    explicit PresetProfiler(Context& ctx) : driver_(ctx) {}

    EventPlan plan() final { return driver_.plan(preset()); }
    void sample(const Sample& s) noexcept final { driver_.sample(s); }
    void lost(const LostRange& l) noexcept final { driver_.lost(l); }
    void interval() final { driver_.interval(); }
    void finish() final { driver_.finish(); }
    void sigusr1() final { driver_.sigusr1(); }

protected:
    virtual Preset preset() = 0;
    Driver driver_;
};

// SPEC §1.10: one command line per implementation that suits the given lists and options;
// `name` the profiler, `fixed` its fixed implementation ("" = multi-trace's choice).
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events, const char* name,
                          const char* fixed);

}  // namespace perfprof::pairing
