// multi-trace: the latency (or pairing, memory, syscall statistics) between the events of
// successive -e positions, correlated by a key (SPEC §4.6). This file plans the events and
// builds the positions and keys; lib/pairing/feed brings the samples to the backup /
// find-previous algorithm of §4.6.3 (lib/pairing/pairer); what a pair means is the
// implementation's (lib/pairing/), and --detail's timeline is lib/pairing/timeline.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/parse.h"
#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "output/event_line.h"
#include "pairing/feed.h"
#include "pairing/model.h"
#include "pairing/pairer.h"
#include "pairing/timeline.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "perf/tsc.h"
#include "stack/stack_printer.h"

namespace perfprof {

namespace {

// ---- the options only multi-trace takes (SPEC §1.5) ----

struct MultiTraceOptions final : ProfilerOptions {
    std::string key;                    // -k: key of the events without key=
    std::string impl = "delay";         // --impl
    uint64_t than_ns = 0;               // --than / --only-than (the last one sets the value)
    bool only_than = false;             // --only-than
    uint64_t lower_ns = 0;              // --lower
    std::optional<std::string> detail;  // --detail[=LIST]
    std::string heatmap;                // --heatmap NAME
    bool cycle = false;                 // --cycle
    bool hist = false;                  // --hist
};

uint64_t positive_time(OptionValue v, const char* option) {
    const uint64_t t = core::parse_time_ns(*v);
    if (!t)
        throw Error::usage(std::string("option `") + option + "' must be above 0, got '" + std::string(*v) +
                           "'");
    return t;
}

using Own = OwnOptions<MultiTraceOptions>;
const OptionRow kOwnOptions[] = {
    Own::row('k', "key", "EXPR", ArgKind::Value, false, Group::Profiler,
             "key of the events without key= (e.g. pid): event1 and\n"
             "event2 pair when their keys are equal; default: the CPU\n"
             "or thread",
             [](MultiTraceOptions& o, OptionValue v) { o.key = std::string(*v); }),
    Own::row(0, "impl", "IMPL", ArgKind::Value, false, Group::Profiler,
             "what a pair means: delay (latency statistics, default),\n"
             "pair (paired or not), kmemprof (bytes allocated and freed\n"
             "by stack), syscalls (raw_syscalls statistics per syscall)",
             [](MultiTraceOptions& o, OptionValue v) { o.impl = std::string(*v); }),
    Own::row(0, "than", "TIME", ArgKind::Value, false, Group::Profiler,
             "print the pairs slower than TIME (e.g. 1ms) with both events",
             [](MultiTraceOptions& o, OptionValue v) { o.than_ns = positive_time(v, "than"); }),
    Own::row(0, "only-than", "TIME", ArgKind::Value, false, Group::Profiler,
             "as --than, and print the table only when a pair exceeded it",
             [](MultiTraceOptions& o, OptionValue v) {
                 o.than_ns = positive_time(v, "only-than");
                 o.only_than = true;
             }),
    Own::row(0, "lower", "TIME", ArgKind::Value, false, Group::Profiler,
             "print the pairs faster than TIME with both events",
             [](MultiTraceOptions& o, OptionValue v) { o.lower_ns = positive_time(v, "lower"); }),
    Own::row(0, "detail", "LIST", ArgKind::OptionalValue, false, Group::Profiler,
             "with --than/--lower, also print the events around a pair:\n"
             "-TIME before event1, +TIME after event2, hide<TIME,\n"
             "samecpu, samepid, sametid, samekey, 1, 2 (--detail=LIST)",
             [](MultiTraceOptions& o, OptionValue v) {
                 o.detail = v ? std::string(*v) : std::string();
                 pairing::parse_detail(*o.detail);  // a malformed item fails here, at parse time
             }),
    Own::row(0, "heatmap", "NAME", ArgKind::Value, false, Group::Profiler,
             "write NAME-EVENT1-EVENT2.lat (time and latency of every\n"
             "pair) and its heat map NAME-EVENT1-EVENT2.svg",
             [](MultiTraceOptions& o, OptionValue v) {
                 if (v->empty()) throw Error::usage("option `heatmap' needs a file name");
                 o.heatmap = std::string(*v);
             }),
    Own::row(0, "cycle", "", ArgKind::Flag, false, Group::Profiler,
             "also pair the last -e with the first (delay only)",
             [](MultiTraceOptions& o, OptionValue v) { o.cycle = flag_value(v); }),
    Own::row(0, "hist", "", ArgKind::Flag, false, Group::Profiler,
             "print a log2 histogram of each pair's latencies with\n"
             "every table",
             [](MultiTraceOptions& o, OptionValue v) { o.hist = flag_value(v); }),
};

class MultiTraceProfiler final : public Profiler {
public:
    explicit MultiTraceProfiler(Context& ctx) : ctx_(ctx), env_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const MultiTraceOptions& own = opt.own_as<MultiTraceOptions>();
        choose_impl(opt, own);
        verbose_ = opt.verbose;

        EventPlan p;
        Planned planned;
        planned.key_exprs = !own.key.empty();
        for (size_t list = 0; list < opt.events.size(); list++) plan_list(opt, own, list, p, planned);
        if (planned.positions.size() < (cycle_ ? 1u : 2u))
            throw Error::usage(std::string("multi-trace needs at least ") +
                               (cycle_ ? "1 -e list" : "2 -e lists") + " of events to pair, got " +
                               std::to_string(planned.positions.size()));
        pairer_ = std::make_unique<pairing::Pairer>(env_, p.events.size());
        pairer_->add_positions(planned.positions, cycle_);
        set_keys(opt, own, p, planned.key_exprs);
        if (own.detail && !own.than_ns && !own.lower_ns)
            std::fprintf(
                stderr, "WARN: --than parameter is not enabled. No need to enable the --detail parameter.\n");
        if (planned.untraced && !own.detail)
            std::fprintf(stderr, "WARN: --detail parameter is not enabled. No need to add untrace events.\n");
        set_outputs(opt, own, planned.stacks);

        // The implementations read the formats (syscalls: field offsets) while they are built;
        // the vector's buffer moves with the plan to the session, so the pointers stay valid.
        for (pairing::TraceEvent* t : by_index_) t->spec = &p.events[size_t(t->index)];
        impl_ = make_impl();
        pairer_->start(by_index_, p, *impl_, timeline_.get(), keyed_, opt.order);
        feed_ = std::make_unique<pairing::Feed>(ctx_, *pairer_, by_index_, timeline_.get(), horizon_);
        if (pairer_->trick()) {
            std::printf("Trick: Enable userland unnecessary detection of sched:sched_wakeup events.\n");
            std::fflush(stdout);
        }

        // 1 MiB a CPU (2 with stacks), woken at half: a 300k events/s storm is read without
        // loss (SPEC's 64 pages lose events under it, as trace's did).
        p.pages = planned.stacks ? 512 : 256;
        p.per_event_wakeup = false;
        p.order = opt.order;
        p.user_filter = true;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        const pairing::TraceEvent* te = event_of(s);
        if (!te) return;
        if (te->trigger) {
            impl_->report();
            env_.print_event(s);
        } else if (verbose_ > 1) {
            env_.print_event(s);
        }
        feed_->push(*te, s, key_of(*te, s));
    }

    void lost(const LostRange& l) noexcept override { feed_->lost(l); }

    void interval() override { impl_->report(); }

    void finish() override {
        feed_->finish();
        impl_->report();
        pairer_->notes(ctx_.out(), by_thread_);
        impl_->finish();
    }

    void sigusr1() override {
        std::string now;
        core::append_wall(core::realtime_now_ns(), now);
        std::printf("%s\nmulti-trace\n  backups: %zu (%zu slots, %zu bytes)\n", now.c_str(), pairer_->live(),
                    pairer_->slots(), pairer_->bytes());
        if (timeline_)
            std::printf("  timeline: %zu samples, %zu bytes (peak %zu samples); %llu event1s let go of it\n",
                        timeline_->nodes(), timeline_->bytes(), timeline_->peak_nodes(),
                        (unsigned long long)pairer_->unpinned());
        if (pairer_->trick())
            std::printf("  unnecessary wake-ups: %llu\n", (unsigned long long)pairer_->unnecessary());
        std::fflush(stdout);
    }

private:
    // What plan_list gathers over the -e lists.
    struct Planned {
        std::vector<std::vector<pairing::TraceEvent*>> positions;  // traced events per position
        bool stacks = false, untraced = false;
        bool key_exprs = false;  // -k, or some event has key=
    };

    // --impl, and --cycle where the implementation takes it.
    void choose_impl(const Options& opt, const MultiTraceOptions& own) {
        impl_name_ = own.impl;
        if (impl_name_ == "call" || impl_name_ == "call-delay")
            throw Error::usage("Only nested-trace can enable --impl " + impl_name_ + ".");
        if (impl_name_ != "delay" && impl_name_ != "pair" && impl_name_ != "kmemprof" &&
            impl_name_ != "syscalls")
            throw Error::usage("--impl " + impl_name_ + " not implemented");
        cycle_ = own.cycle;
        if (cycle_ && impl_name_ != "delay") {
            // SPEC §10 #28: turned off, said only with -v.
            if (opt.verbose > 0) std::printf("--cycle works with --impl delay only: turned off\n");
            cycle_ = false;
        }
    }

    // The events of -e number `list`: planned, and a position of their traced ones unless the
    // list names nested profilers only (context for --detail, SPEC §4.6.11).
    void plan_list(const Options& opt, const MultiTraceOptions& own, size_t list, EventPlan& p,
                   Planned& planned) {
        std::vector<event::Resolved> resolved =
            event::resolve_event_list(opt.events[list], ctx_.tep(), opt.verbose, profiler_names());
        std::vector<pairing::TraceEvent*> traced;
        bool nested_only = true;
        for (event::Resolved& r : resolved) {
            auto te = std::make_unique<pairing::TraceEvent>();
            te->alias = r.item.attrs.alias;
            te->trigger = r.item.attrs.trigger;
            te->position = -1;  // untraced: no position; the traced get theirs below
            te->sys = r.item.sys;
            if (r.item.kind == event::Kind::Profiler) {
                // Forwarded events of another profiler: context for --detail only (SPEC §4.6.11).
                te->untraced = true;
                p.nested.push_back({r.item.sys, r.item.profiler_options, r.item.attrs.cpus});
                nested_.push_back(te.get());
                planned.untraced = true;
                env_.events.push_back(std::move(te));
                continue;
            }
            nested_only = false;
            plan_event(opt, own, r, *te, p, planned);
            if (!te->untraced) traced.push_back(te.get());
            by_index_.push_back(te.get());
            env_.events.push_back(std::move(te));
        }
        if (nested_only) return;
        if (traced.empty())
            throw Error::usage("All tracepoint events in -e option " + std::to_string(list + 1) +
                               " are marked as untraced: -e " + opt.events[list]);
        const int pos = int(planned.positions.size());
        for (pairing::TraceEvent* t : traced) t->position = pos;
        planned.positions.push_back(std::move(traced));
    }

    // One event of a list: its attributes compiled against its fields, and its planned event.
    void plan_event(const Options& opt, const MultiTraceOptions& own, event::Resolved& r,
                    pairing::TraceEvent& te, EventPlan& p, Planned& planned) {
        te.name = r.item.name;
        te.untraced = r.item.attrs.untraced;
        te.stack = r.item.attrs.stack;
        te.index = int(p.events.size());
        te.key = event::compile_attr(r, "key", r.item.attrs.key);
        if (!te.key) te.key = event::compile_attr(r, "key", own.key);  // -k: every event without key=
        te.role = event::compile_attr(r, "role", r.item.attrs.role);
        te.size = event::compile_attr(r, "size", r.item.attrs.size);
        if (!r.item.attrs.printkey.empty() && !printkey_) {
            filter::CompileOptions co;
            co.key_only = true;
            printkey_ = event::compile_attr(r, "printkey", r.item.attrs.printkey, co);
        }
        if (!r.item.attrs.key.empty()) {
            planned.key_exprs = true;
            if (first_key_.empty()) first_key_ = r.item.attrs.key;
        }
        if (te.untraced) planned.untraced = true;
        // Kernel stacks by default (SPEC §4.6.11); --user-callchain adds the user half.
        p.events.push_back(event::planned_event(r, te.stack, opt.user_callchain.value_or(false),
                                                opt.kernel_callchain.value_or(true), opt.dwarf_stack));
        planned.stacks |= te.stack;
    }

    // Keys (SPEC §4.6.2): expressions, else the instance (CPU or thread); what needs --order.
    void set_keys(const Options& opt, const MultiTraceOptions& own, const EventPlan& p, bool key_exprs) {
        keyed_ = key_exprs;
        by_thread_ = !ctx_.threads().empty();
        const size_t rings = by_thread_ ? ctx_.threads().size() : size_t(ctx_.cpu_count());
        if (keyed_ && rings > 1 && !opt.order)
            throw Error::usage("Enable --key or pull= attr, also need to enable --order.");
        if (own.detail && !keyed_ && rings > 1 && !opt.order)
            throw Error::usage("Enable --detail or pull= attr, also need to enable --order.");
        if (own.detail && !p.nested.empty() && !opt.order)
            throw Error::usage("Enable --detail and " + p.nested.front().profiler +
                               "//, also need to enable --order.");
        if (keyed_) {
            env_.key_name = first_key_.empty() ? own.key : first_key_;
            env_.key_width = int(std::max<size_t>(env_.key_name.size(), 6));
        } else {
            env_.key_name = by_thread_ ? "THREAD" : "CPU";
            env_.key_width = int(env_.key_name.size());
            env_.comm_column = by_thread_;
        }
        env_.printkey = printkey_.get();
    }

    // Thresholds (in sample time units), tables, stacks and the --detail timeline.
    void set_outputs(const Options& opt, const MultiTraceOptions& own, bool stacks) {
        env_.tsc = ctx_.tsc_time();
        env_.than = to_units(own.than_ns);
        env_.lower = to_units(own.lower_ns);
        env_.only_than = own.only_than;
        env_.perins = opt.perins;
        env_.heatmap = own.heatmap;
        env_.hist = own.hist;
        env_.verbose = opt.verbose;
        if (stacks) {
            printer_ = std::make_unique<stack::Printer>(
                ctx_.symbolizer(), opt.kernel_callchain.value_or(true), opt.user_callchain.value_or(false));
            env_.printer = printer_.get();
        }
        if (!own.detail) return;
        pairing::DetailSpec d = pairing::parse_detail(*own.detail);
        d.before = to_units(d.before);
        d.after = to_units(d.after);
        d.hide = to_units(d.hide);
        timeline_ = std::make_unique<pairing::Timeline>(env_, d);
        env_.timeline = timeline_.get();
        // Past the horizon an event1 keeps only its own copy, and a pair it still makes prints
        // without the events in between; the memory the timeline costs is the event rate
        // times the horizon (at least 100 ms).
        horizon_ = pairing::Feed::horizon(std::max(env_.than, env_.lower), d, to_units(100000000));
    }

    uint64_t to_units(uint64_t ns) const {
        if (!ns || !ctx_.tsc_time()) return ns;
        const uint64_t khz = perf::tsc_khz();
        return khz ? ns / 1000 * khz / 1000 : ns;
    }

    std::unique_ptr<pairing::Impl> make_impl() {
        if (impl_name_ == "pair") return pairing::make_pair(env_);
        if (impl_name_ == "kmemprof") return pairing::make_kmemprof(env_);
        if (impl_name_ == "syscalls") return pairing::make_syscalls(env_);
        return pairing::make_delay(env_);
    }

    const pairing::TraceEvent* event_of(const Sample& s) const {
        if (s.from) return nested_.empty() ? nullptr : nested_.front();
        if (s.event_index < 0 || size_t(s.event_index) >= by_index_.size()) return nullptr;
        return by_index_[size_t(s.event_index)];
    }

    uint64_t key_of(const pairing::TraceEvent& te, const Sample& s) const {
        if (te.key) {
            return uint64_t(te.key->eval(filter::sample_context(s, ctx_.eval_hooks())));
        }
        // The instance: the CPU, or the attached thread (SPEC §4.6.2).
        if (!by_thread_) return s.cpu;
        const std::vector<int>& t = ctx_.threads();
        return s.instance >= 0 && size_t(s.instance) < t.size() ? uint64_t(t[size_t(s.instance)]) : s.tid;
    }

    Context& ctx_;
    pairing::Env env_;
    std::string impl_name_;
    bool cycle_ = false;
    int verbose_ = 0;
    bool keyed_ = false, by_thread_ = false;
    std::string first_key_;
    std::unique_ptr<filter::Program> printkey_;
    std::vector<pairing::TraceEvent*> by_index_;  // per planned event
    std::vector<pairing::TraceEvent*> nested_;    // nested profilers, plan order
    std::unique_ptr<stack::Printer> printer_;
    std::unique_ptr<pairing::Timeline> timeline_;
    std::unique_ptr<pairing::Impl> impl_;

    std::unique_ptr<pairing::Pairer> pairer_;
    std::unique_ptr<pairing::Feed> feed_;
    uint64_t horizon_ = 0;  // --detail: how long an event1 may hold the timeline
};

// SPEC §1.10: one command line per implementation that suits the given lists and options.
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    const MultiTraceOptions& own = opt.own_as<MultiTraceOptions>();
    // The resolved events of each -e, in order (a wildcard counts as one item of its list).
    std::vector<std::vector<const event::Resolved*>> lists;
    size_t at = 0;
    for (const std::string& e : opt.events) {
        lists.emplace_back();
        for (size_t i = event::split_protected(e, ',').size(); i-- && at < events.size();)
            lists.back().push_back(&events[at++]);
    }
    while (at < events.size()) lists.back().push_back(&events[at++]);
    std::string t;
    for (const char* impl : {"delay", "pair", "kmemprof", "syscalls"}) {
        const std::string name = impl;
        if ((own.impl != "delay" || own.cycle) && name != own.impl) continue;
        if (name == "delay" ? lists.empty() : name != "syscalls" && lists.size() < 2) continue;
        t += "perf-prof multi-trace ";
        if (name == "syscalls") {
            t += "-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit ";
        } else {
            for (const auto& list : lists) {
                t += "-e \"";
                for (size_t i = 0; i < list.size(); i++) {
                    const event::EventItem& it = list[i]->item;
                    if (i) t += ',';
                    if (it.kind == event::Kind::Profiler) {
                        t += it.text;
                        continue;
                    }
                    const event::Attrs& a = it.attrs;
                    t += it.sys + ":" + it.name + "/" + (it.filter.empty() ? "." : it.filter) + "/";
                    if (!a.key.empty() || own.key.empty()) t += "key=" + (a.key.empty() ? "." : a.key) + "/";
                    if (!a.role.empty()) t += "role=" + a.role + "/";
                    if (name == "kmemprof") t += "size=" + (a.size.empty() ? "." : a.size) + "/";
                    if (name != "pair") t += "stack/";
                    if (a.untraced) t += "untraced/";
                    if (a.trigger) t += "trigger/";
                    if (!a.alias.empty()) t += "alias=" + a.alias + "/";
                    if (a.role.empty()) t += "[role=./]";
                    if (!a.untraced) t += "[untraced/]";
                    if (!a.trigger) t += "[trigger/]";
                    if (a.alias.empty()) t += "[alias=./]";
                }
                t += "\" ";
            }
        }
        if (!own.key.empty()) t += "-k " + own.key + " ";
        t += "--order ";
        if (name != "delay") t += "--impl " + name + " ";
        if (opt.perins) t += "--perins ";
        if (own.than_ns)
            t += (own.only_than ? "--only-than " : "--than ") + std::to_string(own.than_ns) + "ns ";
        if (own.lower_ns) t += "--lower " + std::to_string(own.lower_ns) + "ns ";
        if (own.detail) t += "--detail" + (own.detail->empty() ? std::string() : "=" + *own.detail) + " ";
        if (!own.heatmap.empty()) t += "--heatmap " + own.heatmap + " ";
        if (own.cycle) t += "--cycle ";
        if (own.key.empty()) t += "[-k .] ";
        if (!opt.perins) t += "[--perins] ";
        if (!own.than_ns) t += "[--than .] ";
        if (!own.detail) t += "[--detail] ";
        if (own.heatmap.empty() && name == "delay") t += "[--heatmap .] ";
        if (!opt.cpus.empty()) t += "-C " + opt.cpus + " ";
        if (!opt.pids.empty()) t += "-p " + opt.pids + " ";
        if (opt.interval_ms) t += "-i " + std::to_string(opt.interval_ms) + " ";
        if (opt.cpus.empty()) t += "[-C .] ";
        if (opt.pids.empty()) t += "[-p .] ";
        if (!opt.interval_ms) t += "[-i .] ";
        t += "\n";
    }
    return t;
}

}  // namespace

extern const ProfilerInfo multi_trace_info;
const ProfilerInfo multi_trace_info = {
    .name = "multi-trace",
    .summary =
        "Latency between events: pair the events of successive -e lists by key; statistics, "
        "slow pairs with the events around them, heat maps.",
    .usage =
        "-e EVENT[,EVENT...] -e EVENT[,EVENT...] [-e ...] [-k EXPR] [--impl IMPL] [--than TIME] "
        "[--detail[=LIST]] [--perins] [--heatmap NAME] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    Each -e is a position; its events are alternatives. An event of one position",
            "    and the next event of the following position with the same key form a pair:",
            "    -e A,B -e C -e D pairs A->C, B->C, C->D. The key is the event's key=EXPR,",
            "    else -k EXPR, else the CPU (or the thread, with -p/-t/a command).",
            "",
            "    EVENT: sys:name[/filter/ATTR/ATTR/.../]  or  profiler[/options/ATTR/.../]",
            "    ATTR: key=EXPR, role=EXPR (bit 0: may start a pair, bit 1: may end one),",
            "          untraced (shown by --detail, never paired), trigger (print the table",
            "          now), alias=NAME, printkey=EXPR, size=EXPR (kmemprof), stack, max-stack=N",
            "    Keys on several CPUs need --order.",
            "",
            "EXAMPLES",
            "    perf-prof multi-trace -e irq:softirq_entry/vec==1/ -e irq:softirq_exit/vec==1/ -i 1000",
            "    perf-prof multi-trace -e 'sched:sched_wakeup,sched:sched_wakeup_new' \\",
            "        -e 'sched:sched_switch//key=next_pid/' -k pid --order --than 4ms",
            "    perf-prof multi-trace -e syscalls:sys_enter_read -e syscalls:sys_exit_read -p 1234 --perins",
            // One help line, longer than the source's: two literals joined on purpose.
            // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
            "    perf-prof multi-trace -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit --impl syscalls -- "
            "ls",
            "    perf-prof multi-trace -e A -e B --than 1ms --detail=samecpu,-100us,+100us --order",
        },
    .options =
        {
            {Opt::Event, "one position of events; give -e once per position"},
            {Opt::UserCallchain, "user stacks too, for events with the stack attribute"},
            {Opt::KernelCallchain},
            {Opt::Perins, "statistics per key"},
        },
    .create = create_profiler<MultiTraceProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
