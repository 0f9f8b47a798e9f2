// Driver: multi-trace's planning and sample path (SPEC §4.6), configured by a Preset for the
// derivatives (SPEC-PROFILERS §P4-§P6). See driver.h.
#include "pairing/driver.h"
#include "event/tracepoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/parse.h"
#include "core/time.h"
#include "event/planned_event.h"
#include "output/event_line.h"
#include "output/template_options.h"
#include "pairing/detail_spec.h"
#include "pairing/timeline_out.h"
#include "perf-prof/error.h"
#include "perf/tsc.h"
#include "stack/stack_printer.h"

namespace perfprof::pairing {

namespace {

uint64_t positive_time(OptionValue v, const char* option) {
    const uint64_t t = core::parse_time_ns(*v);
    if (!t)
        throw Error::usage(std::string("option `") + option + "' must be above 0, got '" + std::string(*v) +
                           "'");
    return t;
}

using Own = OwnOptions<Settings>;
}  // namespace

namespace rows {
constinit const OptionRow key = Own::row('k', "key", "EXPR", ArgKind::Value, false, Group::Profiler,
                                         "key of the events without key= (e.g. pid): event1 and\n"
                                         "event2 pair when their keys are equal; default: the CPU\n"
                                         "or thread",
                                         [](Settings& o, OptionValue v) { o.key = std::string(*v); });
constinit const OptionRow impl = Own::row(0, "impl", "IMPL", ArgKind::Value, false, Group::Profiler,
                                          "what a pair means: delay (latency statistics, default),\n"
                                          "pair (paired or not), kmemprof (bytes allocated and freed\n"
                                          "by stack), syscalls (raw_syscalls statistics per syscall)",
                                          [](Settings& o, OptionValue v) {
                                              o.impl = std::string(*v);
                                              o.impl_given = true;
                                          });
constinit const OptionRow than =
    Own::row(0, "than", "TIME", ArgKind::Value, false, Group::Profiler,
             "print the pairs slower than TIME (e.g. 1ms) with both events",
             [](Settings& o, OptionValue v) { o.than_ns = positive_time(v, "than"); });
constinit const OptionRow only_than =
    Own::row(0, "only-than", "TIME", ArgKind::Value, false, Group::Profiler,
             "as --than, and print the table only when a pair exceeded it", [](Settings& o, OptionValue v) {
                 o.than_ns = positive_time(v, "only-than");
                 o.only_than = true;
             });
constinit const OptionRow lower =
    Own::row(0, "lower", "TIME", ArgKind::Value, false, Group::Profiler,
             "print the pairs faster than TIME with both events",
             [](Settings& o, OptionValue v) { o.lower_ns = positive_time(v, "lower"); });
constinit const OptionRow detail =
    Own::row(0, "detail", "LIST", ArgKind::OptionalValue, false, Group::Profiler,
             "with --than/--lower, also print the events around a pair:\n"
             "-TIME before event1, +TIME after event2, hide<TIME,\n"
             "samecpu, samepid, sametid, samekey, 1, 2 (--detail=LIST)",
             [](Settings& o, OptionValue v) {
                 o.detail = v ? std::string(*v) : std::string();
                 pairing::parse_detail(*o.detail);  // a malformed item fails here, at parse time
             });
constinit const OptionRow heatmap = Own::row(0, "heatmap", "NAME", ArgKind::Value, false, Group::Profiler,
                                             "write NAME-EVENT1-EVENT2.lat (time and latency of every\n"
                                             "pair) and its heat map NAME-EVENT1-EVENT2.svg",
                                             [](Settings& o, OptionValue v) {
                                                 if (v->empty())
                                                     throw Error::usage("option `heatmap' needs a file name");
                                                 o.heatmap = std::string(*v);
                                             });
constinit const OptionRow cycle = Own::row(0, "cycle", "", ArgKind::Flag, false, Group::Profiler,
                                           "also pair the last -e with the first (delay only)",
                                           [](Settings& o, OptionValue v) { o.cycle = flag_value(v); });
constinit const OptionRow hist = Own::row(0, "hist", "", ArgKind::Flag, false, Group::Profiler,
                                          "print a log2 histogram of each pair's latencies with\n"
                                          "every table",
                                          [](Settings& o, OptionValue v) { o.hist = flag_value(v); });
}  // namespace rows

// What plan_list gathers over the -e lists.
struct Driver::Planned {
    std::vector<std::vector<TraceEvent*>> positions;  // traced events per position
    bool stacks = false, untraced = false;
    bool key_exprs = false;  // -k, or some event has key=
};

Driver::Driver(Context& ctx) : ctx_(ctx), env_(ctx) {}
Driver::~Driver() = default;

EventPlan Driver::plan(Preset preset) {
    preset_ = std::move(preset);
    const Options& opt = ctx_.options();
    const Settings& own = opt.own_as<Settings>();
    choose_impl(opt, own);
    verbose_ = opt.verbose;
    const bool order = opt.order || preset_.order;

    EventPlan p;
    Planned planned;
    planned.key_exprs = !own.key.empty();
    for (size_t list = 0; list < opt.events.size(); list++) plan_list(opt, own, list, p, planned);
    if (preset_.check) preset_.check();
    if (planned.positions.size() < (cycle_ ? 1u : 2u))
        throw Error::usage(preset_.name + " needs at least " + (cycle_ ? "1 -e list" : "2 -e lists") +
                           " of events to pair, got " + std::to_string(planned.positions.size()));
    pairer_ = std::make_unique<Pairer>(env_, p.events.size());
    pairer_->add_positions(planned.positions, cycle_);
    set_keys(opt, own, p, planned.key_exprs);
    if (own.detail && !own.than_ns && !own.lower_ns)
        std::fprintf(stderr,
                     "WARN: --than parameter is not enabled. No need to enable the --detail parameter.\n");
    if (planned.untraced && !own.detail)
        std::fprintf(stderr, "WARN: --detail parameter is not enabled. No need to add untrace events.\n");
    set_outputs(opt, own, planned.stacks);

    // Extra events after the lists: not pairing events, their samples go to the preset.
    extra_from_ = p.events.size();
    for (const auto& [sys, name] : preset_.extra) {
        EventSpec e = event::sampled_tracepoint(ctx_.tep(), sys, name,
                                                PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER |
                                                    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW);
        e.fields = event::tracepoint_fields(*e.tp);
        p.events.push_back(std::move(e));
    }

    // The implementations read the formats (syscalls: field offsets) while they are built;
    // the vector's buffer moves with the plan to the session, so the pointers stay valid.
    for (TraceEvent* t : by_index_) t->spec = &p.events[size_t(t->index)];
    for (size_t i = extra_from_; i < p.events.size(); i++) extra_.push_back(p.events[i]);
    impl_ = make_impl();
    if (opt.timeline_given) {
        auto out = std::make_unique<TimelineOut>(std::move(impl_), env_, opt.timeline,
                                                  preset_.thread_keys || (by_thread_ && !keyed_));
        env_.timeline_out = out.get();
        impl_ = std::move(out);
    }
    pairer_->start(by_index_, p, *impl_, timeline_.get(), keyed_, order);
    feed_ = std::make_unique<Feed>(ctx_, *pairer_, by_index_, timeline_.get(), horizon_);
    if (pairer_->trick()) {
        std::printf("Trick: Enable userland unnecessary detection of sched:sched_wakeup events.\n");
        std::fflush(stdout);
    }

    // 1 MiB a CPU (2 with stacks), woken at half: a 300k events/s storm is read without
    // loss (SPEC's 64 pages lose events under it, as trace's did).
    p.pages = preset_.pages ? preset_.pages * (planned.stacks ? 2 : 1) : planned.stacks ? 512 : 256;
    p.per_event_wakeup = false;
    p.order = order;
    p.user_filter = true;
    if (preset_.system_wide) p.system_wide = true;
    return p;
}

void Driver::sample(const Sample& s) noexcept {
    if (!s.from && s.event_index >= 0 && size_t(s.event_index) >= extra_from_ &&
        size_t(s.event_index) - extra_from_ < extra_.size()) {
        if (preset_.on_extra) preset_.on_extra(s, extra_[size_t(s.event_index) - extra_from_]);
        return;
    }
    const TraceEvent* te = event_of(s);
    if (!te) return;
    if (te->trigger) {
        impl_->report();
        env_.print_event(s);
    } else if (verbose_ > 1) {
        env_.print_event(s);
    }
    feed_->push(*te, s, key_of(*te, s));
}

void Driver::finish() {
    feed_->finish();
    impl_->report();
    pairer_->notes(ctx_.out(), by_thread_);
    impl_->finish();
}

void Driver::sigusr1() {
    std::string now;
    core::append_wall(core::realtime_now_ns(), now);
    std::printf("%s\n%s\n  backups: %zu (%zu slots, %zu bytes)\n", now.c_str(), preset_.name.c_str(),
                pairer_->live(), pairer_->slots(), pairer_->bytes());
    if (timeline_)
        std::printf("  timeline: %zu samples, %zu bytes (peak %zu samples); %llu event1s let go of it\n",
                    timeline_->nodes(), timeline_->bytes(), timeline_->peak_nodes(),
                    (unsigned long long)pairer_->unpinned());
    if (pairer_->trick())
        std::printf("  unnecessary wake-ups: %llu\n", (unsigned long long)pairer_->unnecessary());
    std::fflush(stdout);
}

// --impl (or the preset's), and --cycle where the implementation takes it.
void Driver::choose_impl(const Options& opt, const Settings& own) {
    impl_name_ = preset_.impl.empty() ? own.impl : preset_.impl;
    if (impl_name_ == "call" || impl_name_ == "call-delay")
        throw Error::usage("Only nested-trace can enable --impl " + impl_name_ + ".");
    if (impl_name_ != "delay" && impl_name_ != "pair" && impl_name_ != "kmemprof" && impl_name_ != "syscalls")
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
void Driver::plan_list(const Options& opt, const Settings& own, size_t list, EventPlan& p, Planned& planned) {
    std::vector<event::Resolved> resolved =
        event::resolve_event_list(opt.events[list], ctx_.tep(), opt.verbose, profiler_names());
    std::vector<TraceEvent*> traced;
    bool nested_only = true;
    for (event::Resolved& r : resolved) {
        auto te = std::make_unique<TraceEvent>();
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
        plan_event(opt, own, r, list, *te, p, planned);
        if (!te->untraced) traced.push_back(te.get());
        by_index_.push_back(te.get());
        env_.events.push_back(std::move(te));
    }
    if (nested_only) return;
    if (traced.empty())
        throw Error::usage("All tracepoint events in -e option " + std::to_string(list + 1) +
                           " are marked as untraced: -e " + opt.events[list]);
    const int pos = int(planned.positions.size());
    for (TraceEvent* t : traced) t->position = pos;
    planned.positions.push_back(std::move(traced));
}

// One event of a list: its attributes compiled against its fields, and its planned event.
void Driver::plan_event(const Options& opt, const Settings& own, event::Resolved& r, size_t list,
                        TraceEvent& te, EventPlan& p, Planned& planned) {
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
    const AutoEvent ae{r, int(list)};
    const std::string auto_key = preset_.auto_key ? preset_.auto_key(ae) : std::string();
    if (!auto_key.empty()) {  // the preset's key wins over key= and -k
        te.key = event::compile_attr(r, "key", auto_key);
        planned.key_exprs = true;
        if (first_key_.empty()) first_key_ = auto_key;
    }
    if (te.untraced) planned.untraced = true;
    // Kernel stacks by default (SPEC §4.6.11); --user-callchain adds the user half.
    p.events.push_back(event::planned_event(r, te.stack, opt.user_callchain.value_or(false),
                                            opt.kernel_callchain.value_or(true), opt.dwarf_stack));
    planned.stacks |= te.stack;
    // The preset's kernel filter replaces the user's (SPEC-PROFILERS §P4).
    if (std::optional<std::string> f = preset_.auto_filter ? preset_.auto_filter(ae) : std::nullopt) {
        p.events.back().filter = *f;
        if (opt.verbose > 0 && !f->empty())
            std::printf("%s:%s filter \"%s\"\n", r.item.sys.c_str(), r.item.name.c_str(), f->c_str());
    }
}

// Keys (SPEC §4.6.2): expressions, else the instance (CPU or thread); what needs --order.
void Driver::set_keys(const Options& opt, const Settings& own, const EventPlan& p, bool key_exprs) {
    keyed_ = key_exprs;
    by_thread_ = !ctx_.threads().empty() && !preset_.system_wide;
    const bool order = opt.order || preset_.order;
    const size_t rings = by_thread_ ? ctx_.threads().size() : size_t(ctx_.cpu_count());
    if (keyed_ && rings > 1 && !order)
        throw Error::usage("Enable --key or pull= attr, also need to enable --order.");
    if (own.detail && !keyed_ && rings > 1 && !order)
        throw Error::usage("Enable --detail or pull= attr, also need to enable --order.");
    if (own.detail && !p.nested.empty() && !order)
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
    if (!preset_.key_name.empty()) env_.key_name = preset_.key_name;
    if (preset_.key_width) env_.key_width = std::max(preset_.key_width, int(env_.key_name.size()));
    env_.comm_column |= preset_.comm_column;
    env_.printkey = printkey_.get();
}

// Thresholds (in sample time units), tables, stacks and the --detail timeline.
void Driver::set_outputs(const Options& opt, const Settings& own, bool stacks) {
    env_.tsc = ctx_.tsc_time();
    env_.than = to_units(own.than_ns);
    env_.lower = to_units(own.lower_ns);
    env_.only_than = own.only_than;
    env_.perins = opt.perins;
    env_.heatmap = own.heatmap;
    env_.hist = own.hist;
    env_.verbose = opt.verbose;
    if (stacks) {
        printer_ = std::make_unique<stack::Printer>(ctx_.symbolizer(), opt.kernel_callchain.value_or(true),
                                                    opt.user_callchain.value_or(false));
        env_.printer = printer_.get();
    }
    if (!own.detail) return;
    DetailSpec d = parse_detail(*own.detail);
    d.before = to_units(d.before);
    d.after = to_units(d.after);
    d.hide = to_units(d.hide);
    timeline_ = std::make_unique<Timeline>(env_, d);
    env_.timeline = timeline_.get();
    // Past the horizon an event1 keeps only its own copy, and a pair it still makes prints
    // without the events in between; the memory the timeline costs is the event rate
    // times the horizon (at least 100 ms).
    horizon_ = Feed::horizon(std::max(env_.than, env_.lower), d, to_units(100000000));
}

uint64_t Driver::to_units(uint64_t ns) const {
    if (!ns || !ctx_.tsc_time()) return ns;
    const uint64_t khz = perf::tsc_khz();
    return khz ? ns / 1000 * khz / 1000 : ns;
}

std::unique_ptr<Impl> Driver::make_impl() {
    if (impl_name_ == "pair") return make_pair(env_);
    if (impl_name_ == "kmemprof") return make_kmemprof(env_);
    if (impl_name_ == "syscalls") return make_syscalls(env_);
    return make_delay(env_);
}

const TraceEvent* Driver::event_of(const Sample& s) const {
    if (s.from) return nested_.empty() ? nullptr : nested_.front();
    if (s.event_index < 0 || size_t(s.event_index) >= by_index_.size()) return nullptr;
    return by_index_[size_t(s.event_index)];
}

uint64_t Driver::key_of(const TraceEvent& te, const Sample& s) const {
    if (te.key) {
        return uint64_t(te.key->eval(filter::sample_context(s, ctx_.eval_hooks())));
    }
    // The instance: the CPU, or the attached thread (SPEC §4.6.2).
    if (!by_thread_) return s.cpu;
    const std::vector<int>& t = ctx_.threads();
    return s.instance >= 0 && size_t(s.instance) < t.size() ? uint64_t(t[size_t(s.instance)]) : s.tid;
}

// SPEC §1.10: one command line per implementation that suits the given lists and options.
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events,
                          const char* profiler, const char* fixed) {
    const Settings& own = opt.own_as<Settings>();
    const std::string chosen = *fixed ? std::string(fixed) : own.impl;
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
        if ((*fixed || own.impl != "delay" || own.cycle) && name != chosen) continue;
        if (name == "delay" ? lists.empty() : name != "syscalls" && lists.size() < 2) continue;
        t += std::string("perf-prof ") + profiler + " ";
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
        // A derivative's own options only (its keys and ordering are automatic but kmemprof's).
        const std::string prof = profiler;
        const bool multi = !*fixed, kmem = prof == "kmemprof", delay_like = multi || prof == "rundelay";
        if (multi || kmem) t += "--order ";
        if (name != "delay" && !*fixed) t += "--impl " + name + " ";
        if (opt.perins) t += "--perins ";
        if (own.than_ns)
            t += (own.only_than ? "--only-than " : "--than ") + std::to_string(own.than_ns) + "ns ";
        if (own.lower_ns) t += "--lower " + std::to_string(own.lower_ns) + "ns ";
        if (own.detail) t += "--detail" + (own.detail->empty() ? std::string() : "=" + *own.detail) + " ";
        if (!own.heatmap.empty()) t += "--heatmap " + own.heatmap + " ";
        if (own.cycle) t += "--cycle ";
        if (own.key.empty() && (multi || kmem)) t += "[-k .] ";
        if (!opt.perins && !kmem) t += "[--perins] ";
        if (!own.than_ns && !kmem) t += "[--than .] ";
        if (!own.detail && delay_like) t += "[--detail] ";
        if (own.heatmap.empty() && name == "delay") t += "[--heatmap .] ";
        output::TemplateOptions attach;
        attach.attach(opt);
        t += attach.text() + "\n";
    }
    return t;
}

}  // namespace perfprof::pairing
