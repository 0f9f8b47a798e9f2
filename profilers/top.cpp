// top: sums of tracepoint values per key, printed as a sorted table every interval
// (SPEC-PROFILERS §P1). This file plans the events and compiles their key=, comm=, top-by=,
// top-add= and printkey= programs; the rows, their order and the table are lib/aggregate's.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "aggregate/key_table.h"
#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "output/event_line.h"
#include "output/template_options.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "sym/symbolizer.h"

namespace perfprof {

namespace {

struct TopOptions final : ProfilerOptions {
    std::string key;         // -k: key of the events without key=
    bool only_comm = false;  // --only-comm
};

using Own = OwnOptions<TopOptions>;
const OptionRow kOwnOptions[] = {
    Own::row('k', "key", "EXPR", ArgKind::Value, false, Group::Profiler,
             "key of the events without key= (e.g. pid, _cpu); default:\n"
             "the sample's thread id",
             [](TopOptions& o, OptionValue v) {
                 if (v->empty()) throw Error::usage("option `key' needs an expression");
                 o.key = std::string(*v);
             }),
    Own::row(0, "only-comm", "", ArgKind::Flag, false, Group::Profiler,
             "one row per name (comm= or the task name) instead of per key",
             [](TopOptions& o, OptionValue v) { o.only_comm = flag_value(v); }),
};

constexpr uint32_t kNoTid = 0xffffffff;

class TopProfiler final : public Profiler {
public:
    explicit TopProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        const TopOptions& own = opt.own_as<TopOptions>();
        // SPEC §P1: the first -e only.
        const std::string list = opt.events.empty() ? std::string() : opt.events.front();
        if (list.empty()) throw Error::usage("monitor(top) init failed: no events given (use -e EVENT,...)");
        EventPlan p;
        std::vector<aggregate::Column> columns;
        std::vector<event::Resolved> real;
        for (event::Resolved& r : event::resolve_event_list(list, ctx_.tep(), opt.verbose, profiler_names()))
            if (r.item.kind != event::Kind::Profiler) real.push_back(std::move(r));  // nested: ignored
        if (real.empty()) throw Error::usage("monitor(top) init failed: no tracepoint or probe event in -e");
        check_keys(own, real);
        for (const event::Resolved& r : real) {
            plan_event(own, r, columns);
            // No call chain, whatever the stack attribute says (§P1).
            p.events.push_back(event::planned_event(r, false, false, false));
        }
        set_layout(real);
        set_hooks();
        table_ = std::make_unique<aggregate::KeyTable>(
            std::move(columns),
            only_comm_ ? aggregate::KeyTable::Keyed::ByName : aggregate::KeyTable::Keyed::ByKey);
        p.pages = default_pages();
        // Woken at half the ring (§P1, §3.2); --watermark still decides.
        p.per_event_wakeup = false;
        p.user_filter = true;
        p.interval_ms = 1000;  // §P1: -i 1000 when -i is absent
        verbose_ = opt.verbose;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (s.tid == kNoTid || size_t(s.event_index) >= evs_.size()) return;
        const Ev& e = evs_[size_t(s.event_index)];
        FILE* out = ctx_.out();
        if (verbose_ >= 2) {
            line_.clear();
            output::format_event_line(ctx_, s, line_, ' ');
            std::fwrite(line_.data(), 1, line_.size(), out);
        }
        const filter::EvalContext ec = filter::sample_context(s, hooks_, out);
        uint32_t row;
        if (only_comm_) {
            row = table_->row(name_of(e, s, ec));
        } else {
            uint64_t key = s.tid;
            if (e.key) {
                const int64_t k = e.key->eval(ec);
                key = k == -1 ? 0 : uint64_t(k);
            }
            row = table_->row(key);
            // Keys with comm=: only the events with comm= name rows (§P1 name column rules).
            if (name_column_ && !table_->named(row) && (e.comm || !keyed_))
                table_->set_name(row, name_of(e, s, ec));
        }
        for (size_t c = 0; c < e.columns.size(); c++)
            table_->add(row, e.first_column + c, e.columns[c] ? uint64_t(e.columns[c]->eval(ec)) : 1);
        ++samples_;
    }

    void interval() override { print(); }
    void finish() override { print(); }

private:
    struct Ev {
        std::unique_ptr<filter::Program> key, comm;
        std::vector<std::unique_ptr<filter::Program>> columns;  // null: a count column (adds 1)
        size_t first_column = 0;
    };

    // Ring pages when -m is not given. SPEC says 4 (16 KiB a CPU, woken at half); at the 300k
    // sched_switch/s top must keep up with, bench/top_bench.py measured -m 4 losing 830 of 940k
    // events (7k with four expressions per event) and costing 0.22 us a event in wake-ups, against
    // 0 lost and 0.07 us with these rings. Trace's reasoning holds (profilers/trace.cpp
    // default_pages): 2 MiB a CPU, woken at half, is 3 ms of the storm before a wake-up and as
    // much again of slack; half that past 8 CPUs or for a user other than root.
    int default_pages() const { return ctx_.cpu_count() <= 8 && ::geteuid() == 0 ? 512 : 256; }

    // §P1 key rules: every event has a key (key= or -k) or none does.
    void check_keys(const TopOptions& own, const std::vector<event::Resolved>& real) {
        size_t with = 0;
        for (const event::Resolved& r : real) with += !r.item.attrs.key.empty() || !own.key.empty();
        if (with && with != real.size())
            throw Error::usage("When using key, all events must have a 'key' attr.");
        keyed_ = with != 0;
        only_comm_ = own.only_comm;
        if (only_comm_ && keyed_)
            for (const event::Resolved& r : real)
                if (r.item.attrs.comm.empty())
                    throw Error::usage("--only-comm requires all events to have a 'comm' attr");
    }

    void plan_event(const TopOptions& own, const event::Resolved& r,
                    std::vector<aggregate::Column>& columns) {
        Ev e;
        const event::Attrs& a = r.item.attrs;
        e.key = event::compile_attr(r, "key", a.key);
        if (!e.key && !own.key.empty()) {
            try {
                e.key = event::compile_attr(r, "key", own.key);
            } catch (const Error&) {
                throw Error::usage(r.item.sys + ":" + r.item.name + ": Cannot set key '" + own.key + "'");
            }
        }
        e.comm = event::compile_attr(r, "comm", a.comm);
        if (!a.printkey.empty() && !printkey_) {
            filter::CompileOptions co;
            co.key_only = true;
            printkey_ = event::compile_attr(r, "printkey", a.printkey, co);
        }
        if (key_header_.empty()) key_header_ = !a.key.empty() ? a.key : own.key;
        if (name_header_.empty()) name_header_ = a.comm;
        e.first_column = columns.size();
        for (const event::Attrs::TopColumn& t : a.top) {
            e.columns.push_back(event::compile_attr(r, t.by ? "top-by" : "top-add", t.expr));
            columns.push_back({aggregate::upper(t.expr), t.by});
        }
        if (a.top.empty()) {
            e.columns.push_back(nullptr);
            columns.push_back({aggregate::upper(r.item.name), false});
        }
        if (!a.alias.empty()) columns[e.first_column].header = aggregate::upper(a.alias);
        for (size_t c = e.first_column; c < columns.size(); c++)
            columns[c].width = aggregate::column_width(columns[c].header);
        evs_.push_back(std::move(e));
    }

    // §P1 columns and the name column rules.
    void set_layout(const std::vector<event::Resolved>& real) {
        bool any_comm = false;
        for (const event::Resolved& r : real) any_comm |= !r.item.attrs.comm.empty();
        layout_.key_column = !only_comm_;
        layout_.key_header = key_header_.empty() ? "PID" : aggregate::upper(key_header_);
        layout_.key_width = aggregate::column_width(layout_.key_header, 8);
        name_column_ = only_comm_ || !keyed_ || any_comm;
        layout_.name_column = name_column_;
        layout_.name_header = name_header_.empty() ? "COMM" : aggregate::upper(name_header_);
        if (printkey_) {
            print_key_ = [this](uint64_t key, FILE* out) {
                filter::EvalContext ec;
                ec.key = key;
                ec.out = out;
                ec.hooks = hooks_;
                return int(printkey_->eval(ec));
            };
        }
    }

    // The session's hooks; its kernel table is loaded now when a program calls ksymbol()
    // (comm=ksymbol(call_site)), not at the first event.
    void set_hooks() {
        hooks_ = ctx_.eval_hooks();
        bool ksym = printkey_ && printkey_->uses_ksymbol();
        for (const Ev& e : evs_) {
            ksym |= (e.key && e.key->uses_ksymbol()) || (e.comm && e.comm->uses_ksymbol());
            for (const auto& c : e.columns) ksym |= c && c->uses_ksymbol();
        }
        if (ksym) ctx_.symbolizer().kernel();
    }

    // The row name of a sample: comm= (-1: "Error", a null string: "NULL"), else the task name.
    std::string_view name_of(const Ev& e, const Sample& s, const filter::EvalContext& ec) noexcept {
        if (!e.comm) return ctx_.comm(s.tid);
        const int64_t v = e.comm->eval(ec);
        if (v == -1) return "Error";
        if (!e.comm->result_is_string()) {
            std::snprintf(num_, sizeof num_, "%lld", (long long)v);
            return num_;
        }
        if (!v) return "NULL";
        return reinterpret_cast<const char*>(v);
    }

    void print() {
        if (!table_ || table_->empty()) return;
        const std::string title = aggregate::top_title(core::realtime_now_ns(), samples_);
        aggregate::print_top(ctx_.out(), title, layout_, *table_, printkey_ ? &print_key_ : nullptr);
        table_->clear();
    }

    Context& ctx_;
    std::vector<Ev> evs_;  // by event index
    std::unique_ptr<aggregate::KeyTable> table_;
    aggregate::TopLayout layout_;
    std::unique_ptr<filter::Program> printkey_;
    aggregate::PrintKey print_key_;
    const filter::EvalHooks* hooks_ = nullptr;  // the session's (set_hooks)
    std::string key_header_, name_header_;      // the first key= (or -k) and comm= texts
    bool keyed_ = false, only_comm_ = false, name_column_ = true;
    int verbose_ = 0;
    uint64_t samples_ = 0;  // N: every sample counted, never reset
    std::string line_;
    char num_[24] = {};
};

// SPEC §P0 "help word": a top command line with the given events, attributes and options, and
// bracketed hints for the others.
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    const TopOptions& own = opt.own_as<TopOptions>();
    std::string t = "perf-prof top -e \"";
    bool first = true;
    for (const event::Resolved& r : events) {
        if (r.item.kind == event::Kind::Profiler) continue;
        if (!first) t += ',';
        first = false;
        const event::Attrs& a = r.item.attrs;
        t += r.item.sys + ":" + r.item.name + "/" + (r.item.filter.empty() ? "." : r.item.filter) + "/";
        if (!a.key.empty() || own.key.empty()) t += "key=" + (a.key.empty() ? "." : a.key) + "/";
        if (!a.printkey.empty()) t += "printkey=" + a.printkey + "/";
        for (const event::Attrs::TopColumn& c : a.top) t += (c.by ? "top-by=" : "top-add=") + c.expr + "/";
        if (!a.comm.empty()) t += "comm=" + a.comm + "/";
        if (!a.alias.empty()) t += "alias=" + a.alias + "/";
        if (a.top.empty()) t += "[top-by=./][top-add=./]";
        if (a.comm.empty()) t += "[comm=./]";
        if (a.alias.empty()) t += "[alias=./]";
    }
    output::TemplateOptions o;
    o.value(!own.key.empty(), "-k", own.key);
    o.flag(own.only_comm, "--only-comm");
    o.attach(opt);
    o.pages(opt);
    return t + "\" " + o.text() + "\n";
}

}  // namespace

extern const ProfilerInfo top_info;
const ProfilerInfo top_info = {
    .name = "top",
    .summary = "Sum event values per key and print them, sorted, as a table every interval.",
    .usage = "-e EVENT[,EVENT...] [-k EXPR] [--only-comm] [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    One row per key; one value column per top-by=/top-add= of each event (or a count",
            "    of its samples); the name column last. Rows are sorted by the top-by columns, then",
            "    the other columns, descending, then by key; they are cleared after each table.",
            "    The table is printed every -i ms (default 1000) and at exit, as plain text",
            "    (no full-screen terminal mode). Rings: 512 pages a CPU unless -m is given",
            "    (upstream's 4 lose events at 300k events/s).",
            "",
            "    EVENT: sys:name[/filter/ATTR/ATTR/.../]",
            "    ATTR: key=EXPR (row key; default -k, else the thread id; all events or none),",
            "          printkey=EXPR (prints `key`, returns its length, e.g. printf(\"0x%x\",key);",
            "          at least one space always follows it), top-by=EXPR (a sorting column),",
            "          top-add=EXPR (a column), comm=EXPR (the name column), alias=NAME (the",
            "          first column's header). Several top-by/top-add per event, in order.",
            "    Without keys the name is comm=, else the task name; with keys only events with",
            "    comm= name rows. --only-comm: one row per name (with keys, every event needs comm=).",
            "",
            "EXAMPLES",
            "    perf-prof top -e 'sched:sched_stat_runtime//key=pid/comm=comm/top-by=runtime/'",
            "    perf-prof top -e 'sched:sched_wakeup//comm=comm/' --only-comm",
            "    perf-prof top -e 'kmem:kmem_cache_alloc//top-by=bytes_alloc/comm=ksymbol(call_site)/' --only-comm",
            "    perf-prof top -e irq:softirq_entry -k '(_cpu<<16)|vec'",
            "    perf-prof top -e 'syscalls:sys_enter_write//key=fd/top-add=count/' -- make",
            "    perf-prof top -e 'sched:sched_wakeup//key=pid/' help     # command template and format",
        },
    .options =
        {
            {Opt::Event, "events to aggregate (the first -e only)"},
        },
    .create = create_profiler<TopProfiler>,
    .help_template = help_template,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
