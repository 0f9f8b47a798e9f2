// expr: the expression language's own tool (SPEC-PROFILERS §P13): compile one expression
// against one event's fields, list the compiled program, then evaluate it on the first
// samples (-N, 5 by default), printing each sample's event line and the result.

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/help.h"
#include "event/planned_event.h"
#include "event/resolve.h"
#include "filter/expr.h"
#include "output/event_line.h"
#include "output/template_options.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "sym/symbolizer.h"

namespace perfprof {

extern const ProfilerInfo expr_info;

namespace {

constexpr uint64_t kDefaultSamples = 5;  // -N when the command line gives none

class ExprProfiler final : public Profiler {
public:
    explicit ExprProfiler(Context& ctx) : ctx_(ctx) {}

    EventPlan plan() override {
        const Options& opt = ctx_.options();
        if (opt.words.empty()) {
            // SPEC's message, then the help, exit 129 (before anything is opened).
            std::fflush(stdout);
            std::fputs(" {expression} needs to be specified.\n", stderr);
            cli::print_profiler_help(stderr, expr_info);
            std::exit(129);
        }
        if (opt.words.size() > 1)
            throw Error::usage("expr takes one EXPRESSION, got " + std::to_string(opt.words.size()) +
                               " words (quote the expression; see 'perf-prof expr -h')");
        const std::string list = event::joined_lists(opt);
        if (list.empty()) throw Error::usage("expr needs one event: -e EVENT (see 'perf-prof expr -h')");
        std::vector<event::Resolved> events =
            event::resolve_event_list(list, ctx_.tep(), opt.verbose, profiler_names());
        if (events.size() != 1 || events[0].item.kind == event::Kind::Profiler)
            throw Error::usage("Only a single event is allowed to be specified.");
        const event::Resolved& r = events[0];
        const std::string& text = opt.words[0];
        FILE* out = ctx_.out();
        std::fprintf(out, "expression: %s\n", text.c_str());
        try {
            prog_ = std::make_unique<filter::Program>(filter::compile(text, r.fields));
        } catch (const filter::CompileError& e) {
            std::fputs(e.diagnostics().c_str(), stdout);
            std::fflush(stdout);
            throw Error("expression: " + std::string(e.what()));
        }
        std::fputs(prog_->listing().c_str(), out);
        std::fflush(out);
        if (opt.verbose > 0) prog_->set_trace(out);
        hooks_ = ctx_.eval_hooks();
        if (prog_->uses_ksymbol()) ctx_.symbolizer().kernel();  // loaded before the events come
        EventPlan p;
        p.exit_n = kDefaultSamples;
        EventSpec ev = event::planned_event(r, false, false, false);
        ev.attr.disabled = 1;
        ev.attr.watermark = 0;
        ev.attr.wakeup_events = 1;
        p.events.push_back(std::move(ev));
        p.pages = opt.mmap_pages ? *opt.mmap_pages : 2;
        p.per_event_wakeup = true;
        p.user_filter = true;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        line_.clear();
        output::format_event_line(ctx_, s, line_, ' ');
        FILE* out = ctx_.out();
        std::fwrite(line_.data(), 1, line_.size(), out);
        filter::Value v = prog_->eval(filter::sample_context(s, hooks_, out));
        std::fprintf(out, "result: 0x%" PRIx64 "\n", uint64_t(v));
    }

private:
    Context& ctx_;
    std::unique_ptr<filter::Program> prog_;
    const filter::EvalHooks* hooks_ = nullptr;  // the session's
    std::string line_;
};

// SPEC §1.10 from the first event (the single-event check does not apply to `help`).
std::string help_template(const Options& opt, const std::vector<event::Resolved>& events) {
    std::string t = "perf-prof expr -e \"";
    for (const event::Resolved& r : events) {
        if (r.item.kind == event::Kind::Profiler) continue;
        t += r.item.sys + ":" + r.item.name + "/" + (r.item.filter.empty() ? "." : r.item.filter) + "/";
        break;
    }
    output::TemplateOptions o;
    o.value(!opt.cpus.empty(), "-C", opt.cpus);
    o.value(!opt.pids.empty(), "-p", opt.pids);
    o.value(opt.exit_n != 0, "-N", std::to_string(opt.exit_n));
    return t + "\" 'EXPRESSION' " + o.text() + "[-v]\n";
}

}  // namespace

const ProfilerInfo expr_info = {
    .name = "expr",
    .summary = "Compile an expression against an event's fields, list the program, evaluate it on samples.",
    .usage = "-e EVENT [OPTION...] EXPRESSION",
    .body =
        {
            "SYNOPSIS",
            "    A tool for the expression language of filters, key=, exec=, ... (SPEC §2.7).",
            "    EXPRESSION is compiled against the fields of the one EVENT; the compiled program",
            "    is listed (Instruction:, Global variable:, Strings:), then evaluated on the first",
            "    -N samples (default 5): each sample's line, the output of its printf() calls and",
            "    'result: 0x{value}'. -v traces every evaluated node. _cpu and _pid (also spelled",
            "    __cpu, __pid) are the sample's CPU and process.",
            "",
            "EXAMPLES",
            "    perf-prof expr -e sched:sched_wakeup 'pid * 65536 + prio'",
            "    perf-prof expr -e 'sched:sched_wakeup/_cpu==0/' 'printf(\"%s/%d \", comm, pid)'",
            "    perf-prof expr -e workqueue:workqueue_execute_start 'ksymbol(function)' -v",
            "    perf-prof expr -e kmem:kmalloc help     # command template and format",
        },
    .options =
        {
            {Opt::ExitN, "exit after N samples (default 5)"},
            {Opt::Event, "the one event whose fields the expression uses"},
        },
    .create = create_profiler<ExprProfiler>,
    .takes_words = true,
    .help_template = help_template,
};

}  // namespace perfprof
