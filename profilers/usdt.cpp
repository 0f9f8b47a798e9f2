// usdt: list the USDT probes of ELF files, and add or delete the uprobe events that make them
// tracepoints `provider:name` (SPEC §7).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli/help.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "sym/sdt_notes.h"
#include "tep/uprobe_events.h"

namespace perfprof {

extern const ProfilerInfo usdt_info;

namespace {

constexpr int kExitUsage = 129;

enum class Sub { List, Add, Del };

// SPEC §7.1: a message on stderr, the usdt help, exit 129.
int usage(const char* message) {
    if (message) std::fprintf(stderr, "%s\n", message);
    cli::print_profiler_help(stderr, usdt_info);
    return kExitUsage;
}

// -v/-q may also follow the sub-command (`perf-prof usdt list -v BIN`): our parser gives
// every word after the first non-option to the command, and a SPEC word never starts with '-'.
bool take_flag(const std::string& w, int& verbose) {
    if (w == "--verbose") return ++verbose, true;
    if (w == "--quiet") return --verbose, true;
    if (w.size() < 2 || w[0] != '-' || w.find_first_not_of("vq", 1) != std::string::npos) return false;
    for (char c : w.substr(1)) verbose += c == 'v' ? 1 : -1;
    return true;
}

struct Run {
    Sub sub;
    int verbose;
    int status = 0;

    // The definition of `p` (kind 'p' or '-'), with the stderr notes of §7.3; empty when it
    // cannot be made.
    std::string definition(char kind, const sym::SdtProbe& p, const sym::SdtSpec& spec) {
        sym::SdtArgs args = sym::sdt_uprobe_args(p.args, spec.has_argfmt ? &spec.argfmt : nullptr);
        std::fflush(stdout);  // the notes below after the probe's line, also on one terminal
        if (args.bad_type) {
            std::fprintf(stderr, "Failed to get a valid sdt type\n");
            status = 1;
            return {};
        }
        for (const std::string& op : args.skipped)
            std::fprintf(stderr, "Skipping unsupported SDT argument: %s\n", op.c_str());
        return sym::sdt_uprobe_head(kind, p, spec.binpath) + args.text;
    }

    void list(const sym::SdtProbe& p, const sym::SdtSpec& spec) {
        std::printf("%s:%s@%s\n", p.provider.c_str(), p.name.c_str(), spec.binpath.c_str());
        if (verbose <= 0) return;
        const int w = sym::kSdtHexDigits;
        std::printf("    Addr: 0x%0*llx, Base: 0x%0*llx, Semaphore: 0x%0*llx\n", w,
                    static_cast<unsigned long long>(p.pc), w, static_cast<unsigned long long>(p.base), w,
                    static_cast<unsigned long long>(p.semaphore));
        std::printf("    Arguments: %s\n", p.args.c_str());
        std::string def = definition('p', p, spec);
        if (!def.empty()) std::printf("    Uprobe: %s\n", def.c_str());
    }

    void change(const sym::SdtProbe& p, const sym::SdtSpec& spec) {
        std::printf("%s:%s@%s\n", p.provider.c_str(), p.name.c_str(), spec.binpath.c_str());
        std::string def = definition(sub == Sub::Add ? 'p' : '-', p, spec);
        if (def.empty()) return;
        std::string echo = tep::uprobe_events_echo(def);
        if (verbose > 0) std::printf("    %s\n", echo.c_str());
        std::fflush(stdout);
        if (int err = tep::uprobe_events_append(def); err < 0) {
            std::fprintf(stderr, "    %s failed, %d(%s)\n", echo.c_str(), err, std::strerror(-err));
            status = 1;
        }
    }

    // The probes `spec` selects, in note order, after its notes' warnings (stderr). Null, with
    // one line on stderr, when the file cannot be read or no probe matches: a SPEC that does
    // nothing is the user's mistake (a mistyped path or name), never a silent success.
    std::optional<std::vector<sym::SdtProbe>> select(const sym::SdtSpec& spec) {
        std::optional<sym::SdtNotes> notes = sym::read_sdt_notes(spec.binpath);
        std::fflush(stdout);
        if (!notes) {
            std::fprintf(stderr, "perf-prof: usdt: %s\n", unreadable(spec.binpath).c_str());
            return std::nullopt;
        }
        for (const std::string& w : notes->warnings) std::fprintf(stderr, "%s\n", w.c_str());
        std::vector<sym::SdtProbe> probes;
        for (const sym::SdtProbe& p : notes->probes)
            if (sym::sdt_matches(spec, p)) probes.push_back(p);
        if (probes.empty()) {
            std::fprintf(stderr, "perf-prof: usdt: %s\n", nothing_selected(spec).c_str());
            return std::nullopt;
        }
        return probes;
    }

    void act(const sym::SdtSpec& spec, const std::vector<sym::SdtProbe>& probes) {
        for (const sym::SdtProbe& p : probes) {
            if (sub == Sub::List)
                list(p, spec);
            else
                change(p, spec);
        }
    }

    // Why read_sdt_notes() found no ELF file at `path`.
    static std::string unreadable(const std::string& path) {
        struct stat st;
        if (::stat(path.c_str(), &st) != 0) return "cannot open '" + path + "': " + std::strerror(errno);
        if (S_ISDIR(st.st_mode)) return "'" + path + "' is a directory, not an ELF file";
        if (::access(path.c_str(), R_OK) != 0) return "cannot read '" + path + "': " + std::strerror(errno);
        return "'" + path + "' is not an ELF file";
    }

    static std::string nothing_selected(const sym::SdtSpec& spec) {
        if (spec.provider.empty() && spec.name.empty() && !spec.addr)
            return "'" + spec.binpath + "' has no USDT probes";
        std::string probe = spec.provider.empty() ? "" : spec.provider + ":";
        probe += spec.name.empty() ? "*" : spec.name;
        if (spec.addr) {
            char addr[24];
            std::snprintf(addr, sizeof addr, "@%#llx", static_cast<unsigned long long>(spec.addr));
            probe += addr;
        }
        return "no USDT probe " + probe + " in '" + spec.binpath + "' (see 'perf-prof usdt list " +
               spec.binpath + "')";
    }
};

int usdt(const Options& opt) {
    int verbose = opt.verbose;
    std::vector<std::string> words;
    for (const std::string& w : opt.workload) {
        if (w == "-h" || w == "--help") return usage(nullptr);
        if (!take_flag(w, verbose)) words.push_back(w);
    }
    if (words.empty()) return usage(" One of {add|del|list} needs to be specified.");
    Run run{Sub::List, verbose};
    if (words[0] == "list")
        run.sub = Sub::List;
    else if (words[0] == "add")
        run.sub = Sub::Add;
    else if (words[0] == "del")
        run.sub = Sub::Del;
    else
        return usage((" Unknown sub-command '" + words[0] + "': one of {add|del|list} needs to be specified.")
                         .c_str());
    if (words.size() < 2) return usage(" 'binpath' needs to be specified.");
    // Every SPEC is checked before any is acted on, so a bad one changes nothing.
    std::vector<sym::SdtSpec> specs;
    for (size_t i = 1; i < words.size(); ++i) {
        specs.push_back(sym::parse_sdt_spec(words[i]));
        if (specs.back().binpath.empty()) return usage(" binpath is empty.");
    }
    // So is every binary read and every probe found first: a mistyped SPEC among several leaves
    // uprobe_events untouched.
    std::vector<std::vector<sym::SdtProbe>> selected;
    bool found = true;
    for (const sym::SdtSpec& s : specs) {
        std::optional<std::vector<sym::SdtProbe>> probes = run.select(s);
        found &= probes.has_value();
        selected.push_back(probes.value_or(std::vector<sym::SdtProbe>{}));
    }
    if (!found) return 1;
    for (size_t i = 0; i < specs.size(); ++i) run.act(specs[i], selected[i]);
    return run.status;
}

}  // namespace

const ProfilerInfo usdt_info = {
    .name = "usdt",
    .kind = ProfilerInfo::Kind::Command,
    .summary = "List the USDT probes of a binary; add or delete them as uprobe events.",
    .usage = "{list|add|del} '[[PROVIDER:]NAME@]BINPATH[@ADDR][ ARGFMT...]' ...",
    .body =
        {
            "SYNOPSIS",
            "    USDT (SystemTap SDT) probes are described by the notes of section .note.stapsdt.",
            "    list  prints each probe as provider:name@binpath; with -v its address, base,",
            "          semaphore, argument string and the uprobe definition made from them.",
            "    add   appends that definition to <tracefs>/uprobe_events: the probe becomes the",
            "          tracepoint provider:name, usable with -e provider:name.",
            "    del   removes it again (the -: form of the same definition).",
            "    PROVIDER, NAME and ADDR (the probe's address in its note) select probes; absent,",
            "    every probe of BINPATH is selected. ARGFMT gives one format per argument, only",
            "    that many arguments are fetched, and an item containing %s becomes the fetch",
            "    argument with %s replaced by the operand (e.g. 'ptr=%s:x64'); other items give",
            "    argN=OPERAND:TYPE. Exit status: 0; 1 when a BINPATH cannot be read or is no ELF",
            "    file, when a SPEC selects no probe (then nothing is added or deleted), or when a",
            "    definition could not be made or written; 129 for usage errors.",
            "",
            "EXAMPLES",
            "    perf-prof usdt list -v /usr/bin/python3",
            "    perf-prof usdt add 'ppapp:tick@./app'",
            "    perf-prof trace -e ppapp:tick -- ./app 10",
            "    perf-prof usdt del 'ppapp:tick@./app'",
            "    perf-prof usdt add 'ppapp:tick@./app i=%s ptr=%s:x64'",
        },
    .run_words = usdt,
    .global_options = false,
};

}  // namespace perfprof
