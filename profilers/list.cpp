// list: every tracepoint of the running kernel, optionally those containing a substring
// (SPEC §1.12).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "tep/tracefs.h"

namespace perfprof {

namespace {

int list_tracepoints(const Options& opt) {
    const std::vector<std::string>& words = opt.workload;
    // One plain case-sensitive substring (SPEC §1.12 used the first word and dropped the rest).
    if (words.size() > 1)
        throw Error::usage("list takes one SUBSTRING, got " + std::to_string(words.size()) + " words ('" +
                           words[0] + "' '" + words[1] + (words.size() > 2 ? "' ...)" : "')") +
                           " (see 'perf-prof list -h')");
    const std::string needle = words.empty() ? std::string() : words.front();
    const std::vector<std::string> all = tep::tracepoint_list();
    // Nothing found is said, as grep says it with its exit status (not SPEC §1.12's exit 0).
    if (std::none_of(all.begin(), all.end(),
                     [&](const std::string& tp) { return tp.find(needle) != std::string::npos; }))
        throw Error("no tracepoint contains '" + needle + "'");
    // A terminal gets a pager, as git does; a pipe or file gets the plain list.
    FILE* out = stdout;
    if (::isatty(STDOUT_FILENO)) {
        const char* pager = std::getenv("PAGER");
        out = ::popen(pager && *pager ? pager : "less -FRX", "w");
        if (!out) out = stdout;
    }
    for (const std::string& tp : all)
        if (needle.empty() || tp.find(needle) != std::string::npos) std::fprintf(out, "%s\n", tp.c_str());
    if (out != stdout) ::pclose(out);
    return 0;
}

}  // namespace

extern const ProfilerInfo list_info;
const ProfilerInfo list_info = {
    .name = "list",
    .kind = ProfilerInfo::Kind::Command,
    .summary = "List the tracepoints of this kernel.",
    .usage = "[SUBSTRING]",
    .body =
        {
            "SYNOPSIS",
            "    Print every tracepoint as sys:name, sorted; with SUBSTRING, only those containing it",
            "    (exit status 1 when none does).",
            "",
            "EXAMPLES",
            "    perf-prof list",
            "    perf-prof list sched_",
        },
    .run_words = list_tracepoints,
    .global_options = false,
};

}  // namespace perfprof
