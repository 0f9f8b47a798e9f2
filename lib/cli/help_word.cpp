#include "cli/help_word.h"

#include "event/resolve.h"
#include "perf-prof/error.h"
#include "tep/tep.h"

namespace perfprof::cli {

std::string help_word_text(const Options& opt, const ProfilerInfo* profiler,
                           const std::vector<const ProfilerInfo*>& registry) {
    // §1.10 step 1 (and §10 row 15): nothing to describe, nothing printed.
    if (opt.events.empty()) return {};
    tep::Tep tep;
    std::vector<event::Resolved> events =
        event::resolve_event_list(event::joined_lists(opt), tep, opt.verbose, profiler_names());

    std::string out = "\n";
    if (profiler) {
        if (profiler->help_template) out += profiler->help_template(opt, events);
    } else {
        for (const ProfilerInfo* p : registry)
            if (p && p->help_template) out += p->help_template(opt, events);
    }
    out += "\n";
    for (const event::Resolved& r : events) {
        if (r.item.kind == event::Kind::Profiler) continue;
        out += r.item.sys + ":" + r.item.name + "\n";
        out += r.format;
        out += "\n";
    }
    return out;
}

int run_help_word(const Options& opt, const ProfilerInfo* profiler,
                  const std::vector<const ProfilerInfo*>& profilers) {
    // SPEC §1.10 step 1 printed nothing and exited 0: `perf-prof profile help` looked broken.
    if (opt.events.empty()) {
        const std::string name = profiler ? profiler->name : "";
        throw Error::usage(
            "help describes the events given with -e before it (e.g. perf-prof trace -e "
            "sched:sched_switch help); " +
            (profiler ? "'perf-prof " + name + " -h' lists " + name + "'s options"
                      : std::string("'perf-prof -h' lists the profilers")));
    }
    // Built whole before printing: an error in the third event leaves stdout untouched.
    std::string text = help_word_text(opt, profiler, profilers);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace perfprof::cli
