// lib/event/resolve (SPEC §2.3, §2.4, §2.7.3) against the running kernel's tracefs. The `help`
// word that prints the formats of what it resolves is cli_help_word_test's.
#include "event/resolve.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "filter/expr.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "tep/tracefs.h"

// A function of this very binary for the uprobe tests: its address in memory, through
// /proc/self/maps, gives the file offset the kernel would use, independently of libelf.
extern "C" __attribute__((noinline, used)) int resolve_test_probe_target(int x) {
    asm volatile("" ::: "memory");
    return x * 3 + 1;
}

namespace perfprof::event {
namespace {

namespace fs = std::filesystem;

// tracefs is needed by most tests; a machine without it (not root) skips them with a reason.
bool have_tracefs(std::string* why) {
    try {
        tep::tracefs_dir();
        return true;
    } catch (const Error& e) {
        *why = e.what();
        return false;
    }
}

#define NEED_TRACEFS()                                                    \
    do {                                                                  \
        std::string why_;                                                 \
        if (!have_tracefs(&why_)) GTEST_SKIP() << "no tracefs: " << why_; \
    } while (0)

std::string tracefs_file(const std::string& rel) {
    return tep::read_file(tep::tracefs_dir() + "/events/" + rel);
}

// Resolved::tp points into the Tep, so the tests share one that outlives every result.
tep::Tep& shared_tep() {
    static tep::Tep tep;
    return tep;
}

std::vector<Resolved> R(std::string_view list, int verbose = 0) {
    return resolve_event_list(list, shared_tep(), verbose, profiler_names());
}

// The message of the perfprof::Error `list` raises; fails the test when it raises none.
std::string error_of(std::string_view list, Error::Kind* kind = nullptr) {
    try {
        R(list);
    } catch (const Error& e) {
        if (kind) *kind = e.kind();
        return e.what();
    }
    ADD_FAILURE() << "no error for " << list;
    return {};
}

// A field line of a tracefs format file, parsed here independently of libtraceevent.
struct FormatField {
    std::string type, name;
    uint32_t offset, size;
    bool is_signed;
};

// "<tab>field:TYPE NAME[N];<tab>offset:O;<tab>size:S;<tab>signed:G;" lines; the type keeps the
// array suffix ("char[16]", "__data_loc char[]").
std::vector<FormatField> parse_format(const std::string& text) {
    std::vector<FormatField> out;
    std::istringstream in(text);
    std::string l;
    auto number = [&](const std::string& key) {
        size_t at = l.find(key);
        return at == std::string::npos ? ~0u : static_cast<uint32_t>(std::stoul(l.substr(at + key.size())));
    };
    while (std::getline(in, l)) {
        size_t start = l.find("field:");
        size_t semi = l.find(';');
        if (start == std::string::npos || semi == std::string::npos) continue;
        std::string decl = l.substr(start + 6, semi - start - 6);
        size_t space = decl.find_last_of(' ');
        std::string type = decl.substr(0, space), name = decl.substr(space + 1);
        size_t bracket = name.find('[');
        if (bracket != std::string::npos) {
            type += name.substr(bracket);
            name.resize(bracket);
        }
        out.push_back({type, name, number("offset:"), number("size:"), number("signed:") == 1});
    }
    return out;
}

const filter::Field* field(const Resolved& r, std::string_view name) {
    for (const filter::Field& f : r.fields)
        if (f.name == name) return &f;
    return nullptr;
}

// Every field of `r` against the format text: same names in the same order, offsets, sizes, sign.
void expect_fields_match_format(const Resolved& r) {
    std::vector<FormatField> want = parse_format(r.format);
    ASSERT_FALSE(want.empty()) << r.format;
    ASSERT_EQ(r.fields.size(), want.size()) << r.format;
    for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE(want[i].name);
        EXPECT_EQ(r.fields[i].name, want[i].name);
        EXPECT_EQ(r.fields[i].offset, want[i].offset);
        EXPECT_EQ(r.fields[i].size, want[i].size);
        // __rel_loc / __data_loc headers are u32 words whatever the element sign says.
        if (!r.fields[i].is_dynamic && want[i].type.find("__rel_loc") == std::string::npos) {
            EXPECT_EQ(r.fields[i].is_signed, want[i].is_signed);
        }
        bool array = want[i].type.find('[') != std::string::npos;
        bool chars = want[i].type.find("char") != std::string::npos;
        if (want[i].type.find("__rel_loc") == std::string::npos) {
            EXPECT_EQ(r.fields[i].is_string, array && chars);
            EXPECT_EQ(r.fields[i].is_dynamic, want[i].type.find("__data_loc") != std::string::npos);
        }
    }
}

// ---- tracepoints ----

TEST(Resolve, SchedSwitchTracepoint) {
    NEED_TRACEFS();
    auto v = R("sched:sched_switch/prev_pid>0/stack/");
    ASSERT_EQ(v.size(), 1u);
    const Resolved& r = v[0];
    EXPECT_EQ(r.item.kind, Kind::Tracepoint);
    EXPECT_EQ(r.item.sys, "sched");
    EXPECT_EQ(r.item.name, "sched_switch");
    EXPECT_EQ(r.item.filter, "prev_pid>0");
    EXPECT_TRUE(r.item.attrs.stack);
    ASSERT_NE(r.tp, nullptr);
    EXPECT_EQ(r.attr.type, static_cast<uint32_t>(PERF_TYPE_TRACEPOINT));
    EXPECT_EQ(r.attr.config, std::stoull(tracefs_file("sched/sched_switch/id")));
    EXPECT_EQ(r.attr.config, static_cast<uint64_t>(r.tp->id));
    EXPECT_EQ(r.attr.config1, 0u);
    EXPECT_EQ(r.attr.config2, 0u);
    EXPECT_TRUE(r.probe.empty());
    EXPECT_EQ(r.format, tracefs_file("sched/sched_switch/format"));
    expect_fields_match_format(r);

    // The common header first (§2.3), then the event's own fields.
    ASSERT_GE(r.fields.size(), 4u);
    EXPECT_EQ(r.fields[0].name, "common_type");
    EXPECT_EQ(r.fields[3].name, "common_pid");
    EXPECT_TRUE(r.fields[3].is_signed);
    const filter::Field* comm = field(r, "prev_comm");
    ASSERT_NE(comm, nullptr);
    EXPECT_TRUE(comm->is_string);
    EXPECT_TRUE(comm->is_array);
    EXPECT_EQ(comm->size, 16u);
    EXPECT_EQ(comm->elem_size, 1u);
    const filter::Field* pid = field(r, "next_pid");
    ASSERT_NE(pid, nullptr);
    EXPECT_EQ(pid->size, 4u);
    EXPECT_TRUE(pid->is_signed);
    EXPECT_FALSE(pid->is_array);
    EXPECT_FALSE(pid->is_string);
}

TEST(Resolve, SyscallTracepoint) {
    NEED_TRACEFS();
    auto v = R("syscalls:sys_enter_getpid");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].item.kind, Kind::Tracepoint);
    EXPECT_EQ(v[0].attr.config, std::stoull(tracefs_file("syscalls/sys_enter_getpid/id")));
    EXPECT_EQ(v[0].format, tracefs_file("syscalls/sys_enter_getpid/format"));
    expect_fields_match_format(v[0]);
    const filter::Field* nr = field(v[0], "__syscall_nr");
    ASSERT_NE(nr, nullptr);
    EXPECT_EQ(nr->offset, 8u);
    EXPECT_EQ(nr->size, 4u);
}

TEST(Resolve, ArrayAndDynamicFields) {
    NEED_TRACEFS();
    // raw_syscalls:sys_enter has "unsigned long args[6]": an array, not a string.
    auto v = R("raw_syscalls:sys_enter");
    expect_fields_match_format(v[0]);
    const filter::Field* args = field(v[0], "args");
    ASSERT_NE(args, nullptr);
    EXPECT_TRUE(args->is_array);
    EXPECT_FALSE(args->is_string);
    EXPECT_EQ(args->elem_size, 8u);
    EXPECT_EQ(args->size, 48u);

    // sched_process_exec has "__data_loc char[] filename".
    auto e = R("sched:sched_process_exec");
    expect_fields_match_format(e[0]);
    const filter::Field* fn = field(e[0], "filename");
    ASSERT_NE(fn, nullptr);
    EXPECT_TRUE(fn->is_dynamic);
    EXPECT_TRUE(fn->is_string);
    EXPECT_EQ(fn->size, 4u);
}

// The fields are what the expression compiler of §2.7 takes.
TEST(Resolve, FieldsCompileAsExpressions) {
    NEED_TRACEFS();
    auto v = R("sched:sched_switch,sched:sched_process_exec");
    EXPECT_NO_THROW(
        filter::compile("prev_pid > 0 && next_comm == \"swapper/0\" && common_pid >= 0", v[0].fields));
    EXPECT_NO_THROW(filter::compile("filename_len > 1 && filename ~ \"/usr/*\"", v[1].fields));
    EXPECT_THROW(filter::compile("no_such_field", v[0].fields), Error);
}

// Every tracepoint of a few subsystems: the fields always agree with the format text.
TEST(Resolve, FieldsAgreeWithFormatsAcrossSubsystems) {
    NEED_TRACEFS();
    tep::Tep tep;
    int checked = 0;
    for (const std::string& tp : tep::tracepoint_list()) {
        if (!tp.starts_with("sched:") && !tp.starts_with("signal:") && !tp.starts_with("irq:") &&
            !tp.starts_with("kmem:") && !tp.starts_with("block:"))
            continue;
        SCOPED_TRACE(tp);
        auto v = resolve_event_list(tp, tep, 0, profiler_names());
        ASSERT_EQ(v.size(), 1u);
        expect_fields_match_format(v[0]);
        ++checked;
    }
    EXPECT_GT(checked, 20);
}

TEST(Resolve, NotFound) {
    NEED_TRACEFS();
    Error::Kind kind{};
    EXPECT_EQ(error_of("sched:no_such_event", &kind), "sched:no_such_event not found");
    EXPECT_EQ(kind, Error::Kind::Runtime);
    EXPECT_EQ(error_of("nosys:sched_switch"), "nosys:sched_switch not found");
    // Names that would leave tracefs/events are simply not tracepoints.
    EXPECT_EQ(error_of("..:sched"), "..:sched not found");
    EXPECT_EQ(error_of("sched:.."), "sched:.. not found");
    // The error comes out whatever the position in the list.
    EXPECT_EQ(error_of("sched:sched_switch,sched:nope"), "sched:nope not found");
}

// ---- wildcards (§2.4) ----

TEST(Resolve, WildcardExpansion) {
    NEED_TRACEFS();
    auto v = R("irq:softirq_*/vec==3/stack/");
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].item.name, "softirq_entry");
    EXPECT_EQ(v[1].item.name, "softirq_exit");
    EXPECT_EQ(v[2].item.name, "softirq_raise");
    for (const Resolved& r : v) {
        EXPECT_EQ(r.item.sys, "irq");
        EXPECT_EQ(r.item.filter, "vec==3");
        EXPECT_TRUE(r.item.attrs.stack);
        EXPECT_NE(r.tp, nullptr);
    }
    // Glob classes, and a literal event next to a glob keep list order.
    auto w = R("signal:signal_generat?,sched:sched_switc[h]");
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0].item.name, "signal_generate");
    EXPECT_EQ(w[1].item.name, "sched_switch");
}

TEST(Resolve, WildcardVerboseEcho) {
    NEED_TRACEFS();
    testing::internal::CaptureStdout();
    R("irq:softirq_e*/vec==1/", 1);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(out,
              "Wildcard expansion: 'irq:softirq_e*/vec==1/' -> 'irq:softirq_entry/vec==1/,"
              "irq:softirq_exit/vec==1/'\n");
    // Quiet without -v, and nothing at all for a list without globs.
    testing::internal::CaptureStdout();
    R("irq:softirq_e*", 0);
    R("irq:softirq_entry", 1);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
}

TEST(Resolve, WildcardWithoutMatch) {
    NEED_TRACEFS();
    EXPECT_EQ(error_of("nosuchsys:*"), "No events matching pattern 'nosuchsys:*'");
    EXPECT_EQ(error_of("sched:sched_switch,sched:zz*/a==1/"), "No events matching pattern 'sched:zz*'");
}

// ---- nested profilers (§2.8) ----

TEST(Resolve, NestedProfiler) {
    auto v = R("signal");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].item.kind, Kind::Profiler);
    EXPECT_EQ(v[0].item.sys, "signal");
    EXPECT_EQ(v[0].tp, nullptr);
    EXPECT_TRUE(v[0].fields.empty());
    EXPECT_TRUE(v[0].format.empty());
    EXPECT_EQ(v[0].attr.type, 0u);

    auto w = R("signal/-N 3/untraced/alias=sig/");
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].item.kind, Kind::Profiler);
    EXPECT_EQ(w[0].item.profiler_options, "-N 3");
    EXPECT_TRUE(w[0].item.attrs.untraced);
    EXPECT_EQ(w[0].item.attrs.alias, "sig");

    Error::Kind kind{};
    EXPECT_EQ(error_of("no-such-profiler", &kind),
              "profiler no-such-profiler not found; a tracepoint is SYS:NAME (see 'perf-prof list "
              "no-such-profiler')");
    EXPECT_EQ(kind, Error::Kind::Usage);
    // A nested profiler has no fields for key= and friends.
    EXPECT_NE(error_of("signal//key=pid/").find("needs event fields"), std::string::npos);
}

TEST(Resolve, ProfilerCandidate) {
    NEED_TRACEFS();
    // signal:signal_generate: SYS names a profiler, but tracefs has the tracepoint, which wins.
    auto v = R("signal:signal_generate/sig==9/");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].item.kind, Kind::Tracepoint);
    EXPECT_EQ(v[0].item.sys, "signal");
    EXPECT_EQ(v[0].item.name, "signal_generate");
    EXPECT_EQ(v[0].item.filter, "sig==9");
    ASSERT_NE(v[0].tp, nullptr);
    EXPECT_EQ(v[0].attr.config, std::stoull(tracefs_file("signal/signal_generate/id")));
    expect_fields_match_format(v[0]);

    // Not a tracepoint, and "signal:no_such_tracepoint" is no profiler name: a typo, not found.
    EXPECT_NE(error_of("signal:no_such_tracepoint/-N 1/").find("signal:no_such_tracepoint not found"),
              std::string::npos);
}

// ---- uprobes ----

// The file offset of `addr` from /proc/self/maps (what the kernel itself maps), and the file.
bool mapped_offset(const void* addr, uint64_t* offset, std::string* path) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    auto a = reinterpret_cast<uintptr_t>(addr);
    while (std::getline(maps, line)) {
        unsigned long long start, end, off;
        char perms[8];
        int pos = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perms, &off, &pos) < 4)
            continue;
        if (a < start || a >= end) continue;
        *offset = a - start + off;
        std::string rest = line.substr(static_cast<size_t>(pos));
        *path = rest.substr(rest.find_first_not_of(' '));
        return true;
    }
    return false;
}

std::string self_exe() {
    return fs::read_symlink("/proc/self/exe").string();
}

bool have_uprobe_pmu() {
    return fs::exists(std::string(kPmuDevices) + "/uprobe/type");
}

TEST(Resolve, UprobeOnThisBinary) {
    if (!have_uprobe_pmu()) GTEST_SKIP() << "no uprobe PMU";
    uint64_t want = 0;
    std::string mapped;
    ASSERT_TRUE(mapped_offset(reinterpret_cast<const void*>(&resolve_test_probe_target), &want, &mapped));
    ASSERT_EQ(mapped, self_exe());
    ASSERT_NE(want, 0u);
    EXPECT_EQ(resolve_test_probe_target(1), 4);

    std::string exe = self_exe();
    auto v = R("uprobe:resolve_test_probe_target@\"" + exe + "\"/__probe_ip>0/stack/");
    ASSERT_EQ(v.size(), 1u);
    const Resolved& r = v[0];
    EXPECT_EQ(r.item.kind, Kind::Uprobe);
    EXPECT_EQ(r.item.sys, "uprobe");
    EXPECT_EQ(r.item.name, "resolve_test_probe_target");
    EXPECT_EQ(r.item.filter, "__probe_ip>0");
    EXPECT_EQ(r.probe, exe);
    EXPECT_EQ(r.tp, nullptr);
    EXPECT_EQ(r.attr.type, std::stoul(tep::read_file(std::string(kPmuDevices) + "/uprobe/type")));
    EXPECT_EQ(r.attr.config, 0u);
    EXPECT_EQ(r.attr.config1, 0u);
    EXPECT_EQ(r.attr.config2, want);
    EXPECT_EQ(r.format, probe_format(Kind::Uprobe, "resolve_test_probe_target"));
    ASSERT_EQ(r.fields.size(), 5u);
    EXPECT_EQ(r.fields[4].name, "__probe_ip");
    EXPECT_EQ(r.fields[4].offset, 8u);
    EXPECT_EQ(r.fields[4].size, 8u);
    expect_fields_match_format(r);
    EXPECT_NO_THROW(filter::compile("__probe_ip != 0 && common_pid > 0", r.fields));

    // uretprobe: the retprobe bit of format/retprobe, and the two return fields.
    std::optional<ProbePmu> pmu = probe_pmu("uprobe");
    ASSERT_TRUE(pmu);
    auto w = R("uretprobe:'resolve_test_probe_target@" + exe + "'");
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].item.kind, Kind::Uretprobe);
    EXPECT_EQ(w[0].attr.config, uint64_t(1) << pmu->retprobe_bit);
    EXPECT_EQ(w[0].attr.config2, want);
    ASSERT_EQ(w[0].fields.size(), 6u);
    EXPECT_EQ(w[0].fields[4].name, "__probe_func");
    EXPECT_EQ(w[0].fields[5].name, "__probe_ret_ip");
    EXPECT_EQ(w[0].fields[5].offset, 16u);
    expect_fields_match_format(w[0]);
}

TEST(Resolve, UprobeOnSharedLibrary) {
    if (!have_uprobe_pmu()) GTEST_SKIP() << "no uprobe PMU";
    // getpid lives in libc's .dynsym; the loaded mapping says where in the file.
    uint64_t want = 0;
    std::string lib;
    ASSERT_TRUE(mapped_offset(reinterpret_cast<const void*>(&::getpid), &want, &lib));
    if (lib == self_exe()) GTEST_SKIP() << "getpid is linked statically";
    auto v = R("uprobe:getpid@\"" + lib + "\"");
    EXPECT_EQ(v[0].attr.config2, want);
    EXPECT_EQ(v[0].probe, lib);
}

TEST(Resolve, UprobeErrors) {
    if (!have_uprobe_pmu()) GTEST_SKIP() << "no uprobe PMU";
    std::string exe = self_exe();
    EXPECT_EQ(error_of("uprobe:no_such_function_xyz@\"" + exe + "\""),
              "uprobe:no_such_function_xyz@" + exe + ": symbol no_such_function_xyz not found in " + exe);
    // Undefined in this binary (it comes from libc): not a place to probe here.
    EXPECT_NE(error_of("uprobe:malloc@\"" + exe + "\"").find("symbol malloc not found"), std::string::npos);
    EXPECT_EQ(error_of("uprobe:f@\"/no/such/file\""),
              "uprobe:f@/no/such/file: cannot resolve /no/such/file: No such file or directory");
    EXPECT_EQ(error_of("uprobe:f@\"/tmp\""), "uprobe:f@/tmp: /tmp is not a regular file");
    EXPECT_EQ(error_of("uprobe:f@\"/etc/passwd\""), "uprobe:f@/etc/passwd: /etc/passwd: not an ELF file");
}

// ---- kprobes ----

TEST(Resolve, Kprobe) {
    bool pmu = fs::exists(std::string(kPmuDevices) + "/kprobe/type");
    if (!pmu) {
        // This kernel has none: a clear error, never a crash or a tracefs lookup failure.
        EXPECT_EQ(error_of("kprobe:vfs_read"),
                  "kprobe:vfs_read: this kernel has no kprobe PMU (/sys/bus/event_source/devices/kprobe)");
        EXPECT_NE(error_of("kretprobe:vfs_read/x>1/stack/").find("no kprobe PMU"), std::string::npos);
        return;
    }
    auto v = R("kprobe:vfs_read,kretprobe:vfs_read");
    ASSERT_EQ(v.size(), 2u);
    std::optional<ProbePmu> p = probe_pmu("kprobe");
    ASSERT_TRUE(p);
    EXPECT_EQ(v[0].attr.type, p->type);
    EXPECT_EQ(v[0].attr.config, 0u);
    EXPECT_EQ(v[0].attr.config2, 0u);
    EXPECT_EQ(v[0].probe, "vfs_read");
    EXPECT_EQ(v[1].attr.config, uint64_t(1) << p->retprobe_bit);
    EXPECT_EQ(v[1].fields.size(), 6u);
}

// ---- building blocks ----

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/resolve_test.XXXXXX";
        path_ = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }
    void write(const std::string& rel, const std::string& text) const {
        fs::create_directories(fs::path(path_ + "/" + rel).parent_path());
        std::ofstream(path_ + "/" + rel) << text;
    }

private:
    std::string path_;
};

TEST(ProbePmu, ReadsTypeAndRetprobeBit) {
    TempDir d;
    d.write("kprobe/type", "9\n");
    d.write("kprobe/format/retprobe", "config:0\n");
    d.write("uprobe/type", "10\n");
    d.write("uprobe/format/retprobe", "config:5\n");
    d.write("noret/type", "11\n");
    d.write("bad/type", "x1\n");
    d.write("badret/type", "12\n");
    d.write("badret/format/retprobe", "config1:0\n");
    auto k = probe_pmu("kprobe", d.path());
    ASSERT_TRUE(k);
    EXPECT_EQ(k->type, 9u);
    EXPECT_EQ(k->retprobe_bit, 0);
    auto u = probe_pmu("uprobe", d.path());
    ASSERT_TRUE(u);
    EXPECT_EQ(u->type, 10u);
    EXPECT_EQ(u->retprobe_bit, 5);
    auto n = probe_pmu("noret", d.path());
    ASSERT_TRUE(n);
    EXPECT_EQ(n->retprobe_bit, -1);
    EXPECT_FALSE(probe_pmu("missing", d.path()));
    EXPECT_THROW(probe_pmu("bad", d.path()), Error);
    EXPECT_THROW(probe_pmu("badret", d.path()), Error);
}

TEST(ProbeFormat, ShapedLikeTracefs) {
    EXPECT_EQ(probe_format(Kind::Kprobe, "vfs_read"),
              "name: vfs_read\n"
              "ID: perf kprobe\n"
              "format:\n"
              "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
              "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
              "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
              "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
              "\n"
              "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n"
              "\n"
              "print fmt: \"(%lx)\", REC->__probe_ip\n");
    std::string ret = probe_format(Kind::Uretprobe, "malloc");
    EXPECT_TRUE(ret.starts_with("name: malloc\nID: perf uretprobe\nformat:\n")) << ret;
    EXPECT_NE(ret.find("\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n"
                       "\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n"),
              std::string::npos);
    EXPECT_TRUE(ret.ends_with("print fmt: \"(%lx <- %lx)\", REC->__probe_func, REC->__probe_ret_ip\n"));
    EXPECT_NE(probe_format(Kind::Kretprobe, "f").find("ID: perf kretprobe\n"), std::string::npos);
    EXPECT_NE(probe_format(Kind::Uprobe, "f").find("ID: perf uprobe\n"), std::string::npos);
}

TEST(ProbeFields, CommonHeaderThenProbeWords) {
    auto entry = probe_fields(false);
    ASSERT_EQ(entry.size(), 5u);
    const char* names[] = {"common_type", "common_flags", "common_preempt_count", "common_pid", "__probe_ip"};
    uint32_t offsets[] = {0, 2, 3, 4, 8}, sizes[] = {2, 1, 1, 4, 8};
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(entry[i].name, names[i]);
        EXPECT_EQ(entry[i].offset, offsets[i]);
        EXPECT_EQ(entry[i].size, sizes[i]);
        EXPECT_EQ(entry[i].is_signed, i == 3);
    }
    auto ret = probe_fields(true);
    ASSERT_EQ(ret.size(), 6u);
    EXPECT_EQ(ret[4].name, "__probe_func");
    EXPECT_EQ(ret[4].offset, 8u);
    EXPECT_EQ(ret[5].name, "__probe_ret_ip");
    EXPECT_EQ(ret[5].offset, 16u);
}

}  // namespace
}  // namespace perfprof::event
