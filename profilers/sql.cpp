// sql: tracepoint samples as rows of SQLite tables, queried every interval or saved to a
// database file (SPEC-PROFILERS §P2). The store is lib/sql.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/time.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "filter/expr.h"
#include "perf-prof/error.h"
#include "perf-prof/own_options.h"
#include "perf-prof/profiler.h"
#include "sql/print_format.h"
#include "sql/store.h"
#include "sym/symbolizer.h"

namespace perfprof {

namespace {

struct SqlOptions final : ProfilerOptions {
    std::string query;    // --query SQL
    std::string output2;  // --output2 FILE
    bool verify = false;  // --verify
};

using Own = OwnOptions<SqlOptions>;
const OptionRow kOwnOptions[] = {
    Own::row(0, "query", "SQL", ArgKind::Value, false, Group::Profiler,
             "SQL statements, ';'-separated, run at each -i interval and at exit",
             [](SqlOptions& o, OptionValue v) { o.query = *v; }),
    Own::row(0, "output2", "file", ArgKind::Value, false, Group::Profiler,
             "SQLite database file to store the events in",
             [](SqlOptions& o, OptionValue v) { o.output2 = *v; }),
    Own::row(0, "verify", "", ArgKind::Flag, false, Group::Profiler,
             "memory mode: also run each query on a file database and report differences",
             [](SqlOptions& o, OptionValue v) { o.verify = flag_value(v); }),
};

class SqlProfiler final : public Profiler {
public:
    explicit SqlProfiler(Context& ctx) : ctx_(ctx), own_(ctx.options().own_as<SqlOptions>()) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        check_combination(opt);
        if (opt.verbose) std::fprintf(ctx_.out(), "SQLite %s %s\n", sqlite3_libversion(), sqlite3_sourceid());
        const std::string list = opt.events.empty() ? std::string() : opt.events.front();
        if (list.empty()) throw Error::usage("monitor(sql) init failed: no events given (use -e EVENT,...)");
        EventPlan p;
        p.pages = default_pages();
        std::vector<sql::EventDef> defs;
        bool needs_ksym = false;
        for (event::Resolved& r :
             event::resolve_event_list(list, ctx_.tep(), opt.verbose, profiler_names())) {
            if (r.item.kind == event::Kind::Profiler || !r.tp)
                throw Error::usage("sql: " + r.item.text + ": only tracepoints can be stored");
            EventSpec ev = event::planned_event(r, false, true, true);
            ev.attr.watermark = 1;
            ev.attr.wakeup_watermark = uint32_t(opt.mmap_pages.value_or(p.pages)) * 4096 / 2;
            p.events.push_back(std::move(ev));
            sql::EventDef d;
            d.tp = r.tp;
            d.table = r.item.attrs.alias.empty() ? r.item.name : r.item.attrs.alias;
            d.filter = r.item.filter;
            d.stack = r.item.attrs.stack;
            d.max_stack = r.item.attrs.max_stack;
            d.index = r.item.attrs.index;
            needs_ksym |= std::string_view(r.tp->print_fmt.format ? r.tp->print_fmt.format : "").find("%p") !=
                          std::string_view::npos;
            defs.push_back(std::move(d));
        }
        sql::StoreConfig cfg;
        cfg.path = own_.output2;
        cfg.query = own_.query;
        cfg.verify = own_.verify;
        cfg.isa = sql::machine_isa();
        cfg.verbose = opt.verbose;
        cfg.out = ctx_.out();
        // Loaded here, before the events come: queries run in a thread of their own, which
        // must find the table there (the session's hook loads it on first use otherwise).
        if (needs_ksym || own_.query.find("ksymbol") != std::string::npos) ctx_.symbolizer().kernel();
        if (const filter::EvalHooks* h = ctx_.eval_hooks()) {
            cfg.ksymbol = h->ksymbol;  // the session's kernel table
            cfg.user = h->user;
        }
        store_ = std::make_unique<sql::Store>(std::move(cfg), std::move(defs));
        for (size_t i = 0; i < p.events.size(); ++i) {
            EventSpec& ev = p.events[i];
            std::string f = store_->pushdown(int(i));
            if (f.empty()) continue;
            std::fprintf(ctx_.out(), "%s:%s: SQL Query planner filter: %s\n", ev.sys.c_str(), ev.name.c_str(),
                         f.c_str());
            ev.filter = std::move(f);
        }
        p.per_event_wakeup = false;
        p.user_filter = true;
        return p;
    }

    void sample(const Sample& s) noexcept override { store_->insert(s.event_index, s); }

    void interval() override { store_->interval(wall_now(), false); }

    void finish() override {
        if (store_) store_->interval(wall_now(), true);
    }

    void sigusr1() override {
        if (!store_) return;
        std::printf("Total Inserts: %llu\nTotal Commits: %llu\nTotal SQL Cost: %.3f ms\n",
                    (unsigned long long)store_->inserts(), (unsigned long long)store_->commits(),
                    store_->cost_ms());
        std::fflush(stdout);
    }

private:
    void check_combination(const Options& opt) const {
        if (own_.query.empty() && own_.output2.empty())
            throw Error(
                "Must specify either --query or --output2 (or both).\n"
                "  --query: Execute SQL queries on collected events\n"
                "  --output2: Save events to a database file\n"
                "Without either option, events will be stored in memory with no output.");
        if (!own_.query.empty() && own_.output2.empty() && !opt.interval_ms)
            throw Error(
                "--query without --output2 requires -i (periodic interval).\n"
                "  Without -i, events accumulate in memory until program exit.\n"
                "  Use -i to periodically execute queries and clear memory,\n"
                "  or use --output2 to persist events to a database file.");
    }

    // SPEC's 8 pages (32 KiB a ring) hold 0.2 ms of a 300k events/s storm, while the queries
    // of an interval pause the reading for tens of ms: as trace, 2 MiB rings (1 MiB past 8 CPUs
    // or for a user other than root, whom the kernel lets lock less), woken at half.
    int default_pages() const { return ctx_.cpu_count() <= 8 && ::geteuid() == 0 ? 512 : 256; }

    static std::string wall_now() {
        std::string s;
        core::append_wall(core::realtime_now_ns(), s);
        return s + " \n";
    }

    Context& ctx_;
    const SqlOptions& own_;
    std::unique_ptr<sql::Store> store_;
};

}  // namespace

extern const ProfilerInfo sql_info;
const ProfilerInfo sql_info = {
    .name = "sql",
    .summary = "Store tracepoint events in SQLite tables and query them with SQL.",
    .usage =
        "-e EVENT[,EVENT...] (--query SQL -i MS | --output2 FILE [--query SQL]) [OPTION...] [[--] <command>]",
    .body =
        {
            "SYNOPSIS",
            "    One table per event (alias= renames it): _pid, _tid, _time, _cpu, _period, the",
            "    record's common_flags, common_preempt_count, common_pid, then every field of the",
            "    event's format (INTEGER, TEXT for strings, BLOB for arrays). Table event_metadata",
            "    describes them.",
            "    Memory mode (--query -i): at each interval the queries run, then the rows are",
            "    dropped. File mode (--output2): rows go to a SQLite file (sqlite3 FILE reads it);",
            "    with --query the queries run at each interval and the tables are emptied.",
            "    Functions: symbolic([name,] v), ksymbol(addr), syscall(nr), ipv4_str, ipv4_hstr,",
            "    ipv6_str, ipsa_str, ipsa_hstr, uuid_str, guid_str, mac_str (all always registered).",
            "    index=FIELD indexes that column; otherwise the column the queries constrain most.",
            "    Differences from upstream (its Recommendations): two events with one table name",
            "    are an error (use alias=); statement headers drop leading blanks. Rings default",
            "    to 512 pages (SPEC: 8), room for the queries' pause in a storm. In memory mode the",
            "    chosen index is built before each interval's queries, where a WHERE names it.",
            "",
            "EXAMPLES",
            "    perf-prof sql -e sched:sched_wakeup -i 1000 --query 'SELECT comm, COUNT(*) AS n",
            "        FROM sched_wakeup GROUP BY comm ORDER BY n DESC LIMIT 3'",
            "    perf-prof sql -e irq:softirq_entry -i 1000 --query \"SELECT symbolic(vec), COUNT(*)",
            "        FROM softirq_entry GROUP BY vec\"",
            "    perf-prof sql -e sched:sched_switch --output2 sched.db -- sleep 1; sqlite3 sched.db",
        },
    .options = {{Opt::Event, "tracepoints to store: sys:name[/filter/alias=T/index=F/]"}},
    .create = create_profiler<SqlProfiler>,
    .own_options = kOwnOptions,
    .make_options = Own::make,
};

}  // namespace perfprof
