#include "cli/parser.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "cli/checks.h"
#include "cli/help.h"
#include "cli/option_messages.h"
#include "cli/option_table.h"
#include "cli/store_option.h"
#include "core/text.h"
#include "perf-prof/error.h"

// How the command line is cut up (SPEC §1.2, with one decision of ours, see split_workload):
//
//   perf-prof [any option...] PROFILER [its options...] [--] [workload...]
//
// CLI11 parses each option stretch; it is run twice, once with every option of the table
// enabled (before the profiler word) and once with only the options the profiler accepts.
// prefix_command() makes CLI11 stop at the first word that is not an option or an option's
// value and hand it and everything after it back through remaining(); unknown options are
// handed back too, ahead of that word. So remaining() starts with an unknown option, or with
// "--", or with the profiler/workload word.

namespace perfprof::cli {

namespace {

// Stands for "no value" in the results of an optional-value option; CLI11 needs a default for
// a flag given without "=value", and this one cannot come from a shell word by accident.
constexpr const char* kNoValue = "\x01";
// Stands for an empty "--x=" value while CLI11 parses (see protect_empty_value).
constexpr char kEmptyMark = '\x02';

// The `help` word as a pseudo-profiler (SPEC §1.2 rule 3): after it only -e and -h remain
// usable (with -V, -v and -q, which every word accepts).
const ProfilerInfo kHelpWord{
    .name = "help", .summary = "", .usage = "", .options = {{Opt::Event, nullptr}}, .global_options = false};

std::string see(const ProfilerInfo* p) {
    if (p && p != &kHelpWord) return std::string(" (see 'perf-prof ") + p->name + " -h')";
    return " (see 'perf-prof -h')";
}

// The names string CLI11 wants for one row ("-C,--cpus", "--user-callchain,!--no-user-callchain").
std::string cli11_names(const OptionRow& row) {
    std::string names;
    if (row.short_name) {
        names += '-';
        names += row.short_name;
        names += ',';
    }
    if (!*row.long_name) {
        names.pop_back();  // a short-only row (-g)
        return names;
    }
    names += "--";
    names += row.long_name;
    if (row.negatable) names += std::string(",!--no-") + row.long_name;
    return names;
}

// One CLI11 run over one stretch of argv.
class Pass {
public:
    // `profiler` null: before the profiler word, every option of the table, every profiler's
    // own options (`registry`) and --symbols are enabled.
    Pass(const ProfilerInfo* profiler, const std::vector<const ProfilerInfo*>& registry)
        : profiler_(profiler), registry_(registry) {
        app_.set_help_flag();  // help is ours (help.cpp), -h is an ordinary table flag
        app_.prefix_command();
        for (const OptionRow& row : option_table())
            if (!profiler_ || accepts(*profiler_, row.id)) add_row(row);
        if (profiler_) {
            for (const OptionRow& row : profiler_->own_options) add_row(row);
        } else {
            // The same name in two profilers is one command-line option; which profiler's row
            // parses the value is known once the profiler word is (see apply).
            for (const ProfilerInfo* p : registry_)
                for (const OptionRow& row : p->own_options)
                    if (!find_row(row.long_name)) add_row(row);
            symbols_ = add_value("--symbols");
        }
    }

    // Throws Error::usage for CLI11's syntax errors and for an unknown or unusable option.
    void run(const std::vector<std::string>& args) {
        std::vector<std::string> reversed(args.rbegin(), args.rend());
        for (std::string& w : reversed) protect_empty_value(w);
        try {
            app_.parse(reversed);
        } catch (const CLI::ArgumentMismatch& e) {
            throw Error::usage(missing_value_message(e.what(), args, registry_) + see(profiler_));
        } catch (const CLI::ParseError& e) {
            throw Error::usage(std::string(e.what()) + see(profiler_));
        }
        rest_ = app_.remaining();
        for (std::string& w : rest_) unprotect(w);
        if (!rest_.empty() && looks_like_option(rest_.front())) throw Error::usage(reject(rest_.front()));
    }

    // What CLI11 did not consume: "--" or the first plain word, and everything after it.
    const std::vector<std::string>& rest() const { return rest_; }

    // The first of -h / -V on this stretch, if any: it decides the action, the rest is not run.
    std::optional<Opt> first_help_or_version() const {
        for (const CLI::Option* o : app_.parse_order()) {
            const OptionRow* row = row_of(o);
            if (row && (row->id == Opt::Help || row->id == Opt::Version)) return row->id;
        }
        return std::nullopt;
    }

    // Occurrences in command-line order, so "last wins" and the -v/-q counter come out right.
    // Own options go to `own` through the row `profiler` declares under that name; given
    // before the profiler word, those it does not declare are ignored (SPEC §1.2 rule 2).
    // Errors point at the help of `profiler`, the one that lists these options.
    void apply(Options& opt, const ProfilerInfo* profiler, ProfilerOptions* own) const {
        std::unordered_map<const CLI::Option*, std::size_t> seen;
        try {
            for (const CLI::Option* o : app_.parse_order()) {
                std::string value = o->results().at(seen[o]++);
                unprotect(value);
                const OptionRow* row = row_of(o);
                if (o == symbols_) {
                    opt.symbols = value;
                } else if (row->id != Opt::Own) {
                    store_shared_option(*row, value, opt);
                } else if (const OptionRow* mine = profiler ? own_row(*profiler, row->long_name) : nullptr) {
                    if (own) mine->store(*own, own_value(*mine, value));
                }
            }
        } catch (const Error& e) {
            throw Error(e.what() + see(profiler), e.hint(), e.kind());
        }
    }

private:
    void add_row(const OptionRow& row) {
        CLI::Option* o = nullptr;
        switch (row.kind) {
            case ArgKind::Value:
                o = add_value(cli11_names(row));
                break;
            case ArgKind::Flag:
            case ArgKind::Counter:
                o = app_.add_flag(cli11_names(row))->disable_flag_override();
                break;
            case ArgKind::OptionalValue:
                // A flag, not an option with expected(0,1): CLI11 would take the next word
                // as the value, and SPEC §1.2 wants only the attached "--x=v" form.
                o = app_.add_flag(cli11_names(row) + "{" + kNoValue + "}");
                break;
        }
        rows_[o] = &row;
    }

    const OptionRow* find_row(std::string_view long_name) const {
        for (const auto& [o, row] : rows_)
            if (long_name == row->long_name) return row;
        return nullptr;
    }

    static const OptionRow* own_row(const ProfilerInfo& p, std::string_view long_name) {
        for (const OptionRow& row : p.own_options)
            if (long_name == row.long_name) return &row;
        return nullptr;
    }

    // CLI11's result text as an OptionValue: flags "1"/"0", a bare optional value nothing.
    static OptionValue own_value(const OptionRow& row, const std::string& v) {
        switch (row.kind) {
            case ArgKind::Flag:
            case ArgKind::Counter:
                return std::string_view(v == "false" ? "0" : "1");
            case ArgKind::OptionalValue:
                if (v == kNoValue) return std::nullopt;
                return std::string_view(v);
            case ArgKind::Value:
                break;
        }
        return std::string_view(v);
    }

    CLI::Option* add_value(const std::string& names) {
        return app_.add_option(names)->expected(1)->allow_extra_args(false)->multi_option_policy(
            CLI::MultiOptionPolicy::TakeAll);
    }

    // CLI11 reads an empty attached value ("--cgroups=") as no value at all and takes the next
    // word instead. We cannot tell here whether such a word is an option or another option's
    // value, so every one gets a marker value, and every string that comes back loses it again.
    static void protect_empty_value(std::string& w) {
        if (w.size() > 3 && w.starts_with("--") && w.find('=') == w.size() - 1) w += kEmptyMark;
    }
    static void unprotect(std::string& w) {
        if (w.size() == 1 && w[0] == kEmptyMark)
            w.clear();
        else if (w.size() > 4 && w.starts_with("--") && w.ends_with(kEmptyMark) && w[w.size() - 2] == '=')
            w.pop_back();
    }

    const OptionRow* row_of(const CLI::Option* o) const {
        auto it = rows_.find(o);
        return it == rows_.end() ? nullptr : it->second;
    }

public:
    // "-" alone and words CLI11 took for negative numbers ("-5") are not options to CLI11, but
    // as the first word here they can only be a mistyped option, never a profiler or workload.
    static bool looks_like_option(const std::string& w) { return w.size() > 1 && w[0] == '-' && w != "--"; }

private:

    // Message for the option-looking word CLI11 did not know.
    std::string reject(const std::string& w) const {
        // The options usable here, for "did you mean".
        std::vector<std::string> usable;
        for (const auto& [o, r] : rows_)
            if (*r->long_name) usable.emplace_back(r->long_name);
        return unknown_option_message(w, registry_, usable, profiler_ ? profiler_->name : nullptr,
                                      see(profiler_));
    }

    const ProfilerInfo* profiler_;
    const std::vector<const ProfilerInfo*>& registry_;
    CLI::App app_;
    std::unordered_map<const CLI::Option*, const OptionRow*> rows_;
    CLI::Option* symbols_ = nullptr;
    std::vector<std::string> rest_;
};

const ProfilerInfo* find_in(const std::vector<const ProfilerInfo*>& registry, std::string_view name) {
    for (const ProfilerInfo* p : registry)
        if (p && name == p->name) return p;
    return nullptr;
}

// OUR DECISION, on purpose unlike SPEC §1.2 rule 4 / §10 row 25 (upstream keeps consuming
// perf-prof options found among the workload's words): once the workload has started, every
// remaining word belongs to it verbatim, options included, as with perf and as a shell user
// expects. `perf-prof signal ls -C 1` runs `ls -C 1`. A leading "--" is dropped.
std::vector<std::string> split_workload(const std::vector<std::string>& rest) {
    if (rest.empty()) return {};
    auto from = rest.begin() + (rest.front() == "--" ? 1 : 0);
    return {from, rest.end()};
}

// The words of a takes_words profiler from what its first pass left: plain words are taken,
// each run of options after them parsed by one more pass (in `more`), everything after "--" is
// words.
std::vector<std::string> take_words(std::vector<std::string> rest, const ProfilerInfo* profiler,
                                    const std::vector<const ProfilerInfo*>& registry,
                                    std::vector<std::unique_ptr<Pass>>& more) {
    std::vector<std::string> words;
    while (!rest.empty()) {
        size_t i = 0;
        for (; i < rest.size() && rest[i] != "--" && !Pass::looks_like_option(rest[i]); i++)
            words.push_back(rest[i]);
        if (i == rest.size()) break;
        if (rest[i] == "--") {
            words.insert(words.end(), rest.begin() + long(i) + 1, rest.end());
            break;
        }
        more.push_back(std::make_unique<Pass>(profiler, registry));
        more.back()->run({rest.begin() + long(i), rest.end()});
        rest = more.back()->rest();
    }
    return words;
}

std::shared_ptr<ProfilerOptions> make_own(const ProfilerInfo* p) {
    return p && p->make_options ? p->make_options() : nullptr;
}

// `rest` starts with the `help` word (SPEC §1.10); `after` is the stretch of the profiler's
// options, if a profiler was named.
void parse_help_word(Parsed& out, const Pass& before, const Pass* after, const std::vector<std::string>& rest,
                     const std::vector<const ProfilerInfo*>& registry) {
    Pass help(&kHelpWord, registry);
    help.run({rest.begin() + 1, rest.end()});
    if (auto hv = help.first_help_or_version()) {
        out.action = *hv == Opt::Version ? Action::Version
                     : out.profiler      ? Action::ProfilerHelp
                                         : Action::MainHelp;
        out.opt.version = *hv == Opt::Version;
        return;
    }
    std::shared_ptr<ProfilerOptions> own = make_own(out.profiler);
    before.apply(out.opt, out.profiler, own.get());
    if (after) after->apply(out.opt, out.profiler, own.get());
    help.apply(out.opt, out.profiler, own.get());
    out.opt.own = std::move(own);
    if (!help.rest().empty())
        throw Error::usage("unexpected '" + help.rest().front() + "' after help" + see(out.profiler));
    out.action = Action::HelpWord;
}

}  // namespace

Parsed parse(const std::vector<std::string>& args, const std::vector<const ProfilerInfo*>& registry) {
    Parsed out;
    if (args.empty()) return out;

    Pass before(nullptr, registry);
    before.run(args);
    if (auto hv = before.first_help_or_version()) {
        out.action = *hv == Opt::Help ? Action::MainHelp : Action::Version;
        out.opt.version = *hv == Opt::Version;
        return out;
    }

    const std::vector<std::string>& rest = before.rest();
    const ProfilerInfo* profiler =
        rest.empty() || rest.front() == "--" ? nullptr : find_in(registry, rest.front());
    if (!profiler) {
        // `perf-prof [OPTION...] help`: templates of every profiler (SPEC §1.10).
        if (!rest.empty() && rest.front() == "help") {
            parse_help_word(out, before, nullptr, rest, registry);
            return out;
        }
        before.apply(out.opt, nullptr, nullptr);
        if (rest.empty()) {
            out.action = out.opt.symbols.empty() ? Action::MainHelp : Action::Symbols;
            return out;
        }
        if (rest.front() == "--")
            throw Error::usage("a profiler must come before the workload (see 'perf-prof -h')");
        std::vector<std::string> names;
        names.reserve(registry.size());
        for (const ProfilerInfo* p : registry) names.emplace_back(p->name);
        const std::string guess = core::nearest(rest.front(), names);
        throw Error::usage("unknown profiler '" + rest.front() + "'" +
                           (guess.empty() ? "" : " (did you mean '" + guess + "'?)") +
                           " (see 'perf-prof -h')");
    }

    out.profiler = profiler;
    out.opt.profiler = profiler->name;
    Pass after(profiler, registry);
    after.run({rest.begin() + 1, rest.end()});
    // A takes_words profiler: its words, and the options between and after them (SPEC-PROFILERS §P0).
    std::vector<std::unique_ptr<Pass>> more;
    if (profiler->takes_words && !(!after.rest().empty() && after.rest().front() == "help"))
        out.opt.words = take_words(after.rest(), profiler, registry, more);
    std::optional<Opt> hv = after.first_help_or_version();
    for (size_t i = 0; !hv && i < more.size(); i++) hv = more[i]->first_help_or_version();
    if (hv) {
        out.action = *hv == Opt::Help ? Action::ProfilerHelp : Action::Version;
        out.opt.version = *hv == Opt::Version;
        return out;
    }

    // `help` as the first workload word; "-- help" runs a command named help, and commands
    // with their own words (list, usdt) take it as one of them.
    if (!profiler->is_command() && !after.rest().empty() && after.rest().front() == "help") {
        parse_help_word(out, before, &after, after.rest(), registry);
        return out;
    }

    // Values are validated only now, so that -h anywhere before the workload wins over a bad value.
    std::shared_ptr<ProfilerOptions> own = make_own(profiler);
    before.apply(out.opt, profiler, own.get());
    after.apply(out.opt, profiler, own.get());
    for (const auto& p : more) p->apply(out.opt, profiler, own.get());
    out.opt.own = std::move(own);
    if (!profiler->takes_words) out.opt.workload = split_workload(after.rest());
    out.separator = !after.rest().empty() && after.rest().front() == "--";
    if (!profiler->is_command()) settle(out.opt, *profiler);
    out.action = Action::Run;
    return out;
}

}  // namespace perfprof::cli
