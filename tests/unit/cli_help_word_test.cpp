// The `help` word (SPEC §1.10): its parsing (lib/cli/parser) and its text (lib/cli/help_word),
// the formats of the events it names as the running kernel's tracefs has them. The uretprobe of
// ProbesAndErrors is on resolve_test_probe_target, a function of this binary (resolve_test.cpp).
#include "cli/help_word.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/parser.h"
#include "event/resolve.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "tep/tracefs.h"

namespace perfprof::cli {
namespace {

using event::Resolved;

std::string fake_template(const Options& opt, const std::vector<Resolved>& events) {
    std::string s = "perf-prof fake";
    for (const Resolved& r : events) s += " " + r.item.text;
    if (opt.call_graph) s += " -g";
    return s + "\n";
}
std::string other_template(const Options&, const std::vector<Resolved>& events) {
    return "perf-prof other " + std::to_string(events.size()) + "\n";
}

// "fake" takes -e and -g and has a template; "plain" takes -e and has none; "words" has its
// own argument parser like `list`.
ProfilerInfo make(const char* name, decltype(ProfilerInfo::help_template) tmpl,
                  decltype(ProfilerInfo::run_words) words = nullptr) {
    ProfilerInfo p{.name = name, .summary = "demo", .usage = "-e EVENT"};
    p.options = {{Opt::Event, nullptr}, {Opt::CallGraph, nullptr}};
    p.help_template = tmpl;
    p.run_words = words;
    if (words) p.kind = ProfilerInfo::Kind::Command;
    return p;
}
int no_words(const Options&) {
    return 0;
}
const ProfilerInfo kFake = make("fake", fake_template);
const ProfilerInfo kOther = make("other", other_template);
const ProfilerInfo kPlain = make("plain", nullptr);
const ProfilerInfo kWords = make("words", nullptr, no_words);
const std::vector<const ProfilerInfo*> kRegistry{&kFake, &kOther, &kPlain, &kWords};

Parsed P(std::vector<std::string> args) {
    return parse(args, kRegistry);
}

TEST(HelpWordParse, AfterProfilerAndOptions) {
    Parsed p = P({"fake", "-e", "sched:sched_switch", "-g", "help"});
    EXPECT_EQ(p.action, Action::HelpWord);
    EXPECT_EQ(p.profiler, &kFake);
    EXPECT_EQ(p.opt.events, std::vector<std::string>{"sched:sched_switch"});
    EXPECT_TRUE(p.opt.call_graph);
    EXPECT_TRUE(p.opt.workload.empty());

    // -e after the word, and accumulation over both sides.
    p = P({"fake", "-e", "a:b", "help", "-e", "c:d"});
    EXPECT_EQ(p.action, Action::HelpWord);
    EXPECT_EQ(p.opt.events, (std::vector<std::string>{"a:b", "c:d"}));

    p = P({"plain", "help"});
    EXPECT_EQ(p.action, Action::HelpWord);
    EXPECT_EQ(p.profiler, &kPlain);
    EXPECT_TRUE(p.opt.events.empty());
}

TEST(HelpWordParse, WithoutProfiler) {
    Parsed p = P({"help"});
    EXPECT_EQ(p.action, Action::HelpWord);
    EXPECT_EQ(p.profiler, nullptr);
    p = P({"-e", "sched:sched_wakeup", "-C", "0", "help"});
    EXPECT_EQ(p.action, Action::HelpWord);
    EXPECT_EQ(p.profiler, nullptr);
    EXPECT_EQ(p.opt.events, std::vector<std::string>{"sched:sched_wakeup"});
    EXPECT_EQ(p.opt.cpus, "0");
}

TEST(HelpWordParse, NotTheHelpWord) {
    // After "--" it is a workload named help.
    Parsed p = P({"fake", "-e", "a:b", "--", "help"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.workload, std::vector<std::string>{"help"});
    // Only as the first workload word.
    p = P({"fake", "ls", "help"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.workload, (std::vector<std::string>{"ls", "help"}));
    // Commands with their own words take it as one of them.
    p = P({"words", "help"});
    EXPECT_EQ(p.action, Action::Run);
    EXPECT_EQ(p.opt.workload, std::vector<std::string>{"help"});
}

TEST(HelpWordParse, AfterTheWord) {
    // -h still asks for help: the profiler's, or the main help without one.
    EXPECT_EQ(P({"fake", "help", "-h"}).action, Action::ProfilerHelp);
    EXPECT_EQ(P({"help", "-h"}).action, Action::MainHelp);
    // Other options are no longer usable, nor are further words.
    auto usage = [](std::vector<std::string> args) {
        try {
            P(args);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), Error::Kind::Usage);
            return std::string(e.what());
        }
        ADD_FAILURE() << "no error";
        return std::string();
    };
    EXPECT_EQ(usage({"fake", "help", "-C", "0"}),
              "option `cpus' is not usable with help (see 'perf-prof -h')");
    EXPECT_EQ(usage({"fake", "help", "-g"}), "option `g' is not usable with help (see 'perf-prof -h')");
    EXPECT_EQ(usage({"fake", "help", "ls"}), "unexpected 'ls' after help (see 'perf-prof fake -h')");
    EXPECT_EQ(usage({"help", "x"}), "unexpected 'x' after help (see 'perf-prof -h')");
}

bool tracefs_ok() {
    try {
        tep::tracefs_dir();
        return true;
    } catch (const Error&) {
        return false;
    }
}

std::string format_of(const std::string& sys_name) {
    std::string s = sys_name;
    s[s.find(':')] = '/';
    return tep::read_file(tep::tracefs_dir() + "/events/" + s + "/format");
}

TEST(HelpWordText, NothingWithoutEvents) {
    Options opt;
    EXPECT_EQ(help_word_text(opt, &kFake, kRegistry), "");
    EXPECT_EQ(help_word_text(opt, nullptr, kRegistry), "");
}

TEST(HelpWordText, TemplateThenFormats) {
    if (!tracefs_ok()) GTEST_SKIP() << "no tracefs";
    Options opt;
    opt.events = {"sched:sched_switch/prev_pid>0/", "signal,signal:signal_generate"};
    opt.call_graph = true;
    std::string want = "\nperf-prof fake sched:sched_switch/prev_pid>0/ signal signal:signal_generate -g\n\n";
    // The nested profiler `signal` prints no format.
    want += "sched:sched_switch\n" + format_of("sched:sched_switch") + "\n";
    want += "signal:signal_generate\n" + format_of("signal:signal_generate") + "\n";
    EXPECT_EQ(help_word_text(opt, &kFake, kRegistry), want);

    // No profiler: every template of the registry, in registry order.
    Options o2;
    o2.events = {"sched:sched_wakeup"};
    EXPECT_EQ(help_word_text(o2, nullptr, kRegistry),
              "\nperf-prof fake sched:sched_wakeup\nperf-prof other 1\n\nsched:sched_wakeup\n" +
                  format_of("sched:sched_wakeup") + "\n");
    // A profiler without a template: just the blank lines and the formats.
    EXPECT_EQ(help_word_text(o2, &kPlain, kRegistry),
              "\n\nsched:sched_wakeup\n" + format_of("sched:sched_wakeup") + "\n");
}

TEST(HelpWordText, ProbesAndErrors) {
    if (!tracefs_ok()) GTEST_SKIP() << "no tracefs";
    Options opt;
    opt.events = {"sched:no_such_tp"};
    EXPECT_THROW(help_word_text(opt, &kFake, kRegistry), Error);
    opt.events = {"no_such_profiler"};
    EXPECT_THROW(help_word_text(opt, &kFake, kRegistry), Error);

    if (!std::filesystem::exists(std::string(event::kPmuDevices) + "/uprobe/type")) return;
    std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    opt.events = {"uretprobe:resolve_test_probe_target@\"" + exe + "\""};
    EXPECT_EQ(help_word_text(opt, &kPlain, kRegistry),
              "\n\nuretprobe:resolve_test_probe_target\n" +
                  event::probe_format(event::Kind::Uretprobe, "resolve_test_probe_target") + "\n");
}

}  // namespace
}  // namespace perfprof::cli
