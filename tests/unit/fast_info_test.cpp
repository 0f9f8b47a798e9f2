// tep::FastInfo: the native sched_switch / sched_wakeup INFO renderers against libtraceevent's
// own rendering (with its installed plugins) of the same random records, and Tep's refusal to
// use a renderer that does not print as libtraceevent does.
#include "tep/fast_info.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tep/tep.h"
#include "tep_formats.h"

using perfprof::tep::FastInfo;
using perfprof::tep::Tep;

namespace {

using perfprof::unit::kSchedSwitchFields;
using perfprof::unit::kSchedWakeupFields;

// Linux 6.18's fields; the print fmts are shortened: the plugin replaces them.
const char kSwitchPrint[] =
    "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%lx ==> next_comm=%s next_pid=%d next_prio=%d\", "
    "REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state, REC->next_comm, REC->next_pid, "
    "REC->next_prio";
const char kWakeupPrint[] =
    "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";
// An older kernel's sched_switch: prev_state a 4-byte int, comms signed.
const char kSwitchFieldsOld[] =
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_state;\toffset:32;\tsize:4;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:36;\tsize:16;\tsigned:1;\n"
    "\tfield:pid_t next_pid;\toffset:52;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:56;\tsize:4;\tsigned:1;\n";
// An older kernel's sched_wakeup, with success.
const char kWakeupFieldsOld[] =
    "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:int success;\toffset:32;\tsize:4;\tsigned:1;\n"
    "\tfield:int target_cpu;\toffset:36;\tsize:4;\tsigned:1;\n";

tep_event* parse(Tep& tep, const char* name, int id, const char* fields, const char* print) {
    tep_event* ev = perfprof::unit::parse_format(tep, "sched", name, id, fields, print);
    EXPECT_NE(ev, nullptr) << name;
    return ev;
}

// Random records of `ev`: any bytes in the comms (NUL-terminated or not), any field values; a
// dynamic string (__data_loc) at offset 96, after the fixed fields, always NUL-terminated
// (libtraceevent would read past the record otherwise).
std::vector<std::vector<uint8_t>> random_records(tep_event* ev, int n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<uint8_t>> out;
    for (int i = 0; i < n; i++) {
        std::vector<uint8_t> r(128);  // the largest fixed part here is 64 bytes
        for (auto& b : r) b = uint8_t(rng());
        const uint16_t type = uint16_t(ev->id);
        std::memcpy(r.data(), &type, 2);
        for (tep_format_field* f = ev->format.fields; f; f = f->next) {
            uint8_t* p = r.data() + f->offset;
            if (f->flags & TEP_FIELD_IS_DYNAMIC) {
                const uint32_t len = uint32_t(rng() % 24);  // with its NUL; 0: an empty string
                for (uint32_t k = 0; k < len; k++) r[96 + k] = k + 1 < len ? uint8_t(1 + rng() % 255) : 0;
                const uint32_t loc = len << 16 | 96;
                std::memcpy(p, &loc, 4);
            } else if (f->flags & TEP_FIELD_IS_ARRAY) {
                // A random length; NUL-padded as the kernel's strscpy leaves it, or full.
                const size_t len = rng() % (size_t(f->size) + 1);
                for (size_t k = 0; k < size_t(f->size); k++) p[k] = k < len ? uint8_t(1 + rng() % 255) : 0;
            } else if (rng() % 4 == 0) {
                // Small values and the state bits alone, which random words rarely are.
                uint64_t v = rng() % 3 == 0 ? (uint64_t(1) << (rng() % 12)) : rng() % 200;
                if (rng() % 2) v = uint64_t(0) - v;
                std::memcpy(p, &v, size_t(f->size));
            }
        }
        out.push_back(std::move(r));
    }
    return out;
}

// libtraceevent with its plugins loaded prints sched_switch as "comm:pid [prio] S ==> ...";
// without the plugin the native renderers must not be used (checked in PluginsDisabled).
bool plugin_loaded(Tep& tep, tep_event* ev) {
    std::string s;
    for (const auto& r :
         perfprof::tep::fast_info_probes(perfprof::tep::plan_fast_info(*ev), uint16_t(ev->id))) {
        tep.render_info_generic(r.data(), uint32_t(r.size()), 0, 0, s);
        return s.find("==>") != std::string::npos && s.find("prev_comm=") == std::string::npos;
    }
    return false;
}

void expect_same_as_libtraceevent(Tep& tep, tep_event* ev, FastInfo::Kind kind) {
    ASSERT_NE(ev, nullptr);
    EXPECT_EQ(tep.fast_info(uint16_t(ev->id)).kind, kind);
    int mismatches = 0;
    for (const auto& r : random_records(ev, 20000, uint32_t(ev->id))) {
        std::string want, got;
        tep.render_info_generic(r.data(), uint32_t(r.size()), 0, 0, want);
        tep.render_info(r.data(), uint32_t(r.size()), 0, 0, got);
        if (got != want && ++mismatches <= 5)
            ADD_FAILURE() << "libtraceevent: " << want << "\nnative: " << got;
    }
    EXPECT_EQ(mismatches, 0);
}

}  // namespace

TEST(FastInfo, PlansTheSchedEventsByTheirFields) {
    Tep tep;
    tep_event* sw = parse(tep, "sched_switch", 372, kSchedSwitchFields, kSwitchPrint);
    tep_event* wk = parse(tep, "sched_wakeup", 374, kSchedWakeupFields, kWakeupPrint);
    tep_event* wg = parse(tep, "sched_waking", 375, kSchedWakeupFields, kWakeupPrint);  // not the plugin's
    ASSERT_TRUE(sw && wk && wg);
    FastInfo f = perfprof::tep::plan_fast_info(*sw);
    EXPECT_EQ(f.kind, FastInfo::Kind::SchedSwitch);
    EXPECT_EQ(f.min_size, 64u);
    EXPECT_EQ(f.f[3].offset, 32);
    EXPECT_EQ(f.f[3].size, 8);
    f = perfprof::tep::plan_fast_info(*wk);
    EXPECT_EQ(f.kind, FastInfo::Kind::SchedWakeup);
    EXPECT_EQ(f.f[3].size, 0);  // no success field since Linux 4.x
    EXPECT_EQ(f.f[4].offset, 32);
    EXPECT_EQ(perfprof::tep::plan_fast_info(*wg).kind, FastInfo::Kind::Format);  // its print fmt, compiled
    // A short record is left to libtraceevent.
    std::string out;
    std::vector<uint8_t> r(40, 0);
    EXPECT_FALSE(perfprof::tep::render_fast_info(perfprof::tep::plan_fast_info(*sw), r.data(), 40, out));
    EXPECT_TRUE(out.empty());
}

TEST(FastInfo, MissingFieldMeansNoRenderer) {
    Tep tep;
    std::string fields = kSchedSwitchFields;
    fields.replace(fields.find("next_pid;"), 8, "next_tid");
    tep_event* sw = parse(tep, "sched_switch", 372, fields.c_str(), "\"next_tid=%d\", REC->next_tid");
    ASSERT_NE(sw, nullptr);
    EXPECT_EQ(perfprof::tep::plan_fast_info(*sw).kind, FastInfo::Kind::None);
    EXPECT_EQ(tep.fast_info(372).kind, FastInfo::Kind::None);
}

TEST(FastInfo, SchedSwitchPrintsAsLibtraceevent) {
    Tep tep;
    tep_event* ev = parse(tep, "sched_switch", 372, kSchedSwitchFields, kSwitchPrint);
    if (!plugin_loaded(tep, ev)) GTEST_SKIP() << "libtraceevent's sched_switch plugin is not installed";
    expect_same_as_libtraceevent(tep, ev, FastInfo::Kind::SchedSwitch);
}

TEST(FastInfo, OldSchedSwitchPrintsAsLibtraceevent) {
    Tep tep;
    tep_event* ev = parse(tep, "sched_switch", 300, kSwitchFieldsOld, kSwitchPrint);
    if (!plugin_loaded(tep, ev)) GTEST_SKIP() << "libtraceevent's sched_switch plugin is not installed";
    expect_same_as_libtraceevent(tep, ev, FastInfo::Kind::SchedSwitch);
}

TEST(FastInfo, SchedWakeupPrintsAsLibtraceevent) {
    Tep tep;
    tep_event* sw = parse(tep, "sched_switch", 372, kSchedSwitchFields, kSwitchPrint);
    if (!plugin_loaded(tep, sw)) GTEST_SKIP() << "libtraceevent's sched_switch plugin is not installed";
    expect_same_as_libtraceevent(tep, parse(tep, "sched_wakeup", 374, kSchedWakeupFields, kWakeupPrint),
                                 FastInfo::Kind::SchedWakeup);
    expect_same_as_libtraceevent(tep, parse(tep, "sched_wakeup", 301, kWakeupFieldsOld, kWakeupPrint),
                                 FastInfo::Kind::SchedWakeup);
}

int other_handler(trace_seq* s, tep_record*, tep_event*, void*) {
    return trace_seq_puts(s, "another plugin");
}

TEST(FastInfo, AnotherHandlerMeansNoRenderer) {
    // A sched_switch handler other than the plugin's (or none): the probes print differently
    // and Tep keeps libtraceevent's rendering.
    Tep tep;
    tep_event* ev = parse(tep, "sched_switch", 372, kSchedSwitchFields, kSwitchPrint);
    ASSERT_NE(ev, nullptr);
    ASSERT_GE(tep_register_event_handler(tep.handle(), -1, "sched", "sched_switch", other_handler, nullptr),
              0);
    EXPECT_EQ(perfprof::tep::plan_fast_info(*ev).kind, FastInfo::Kind::SchedSwitch);
    expect_same_as_libtraceevent(tep, ev, FastInfo::Kind::None);
}

namespace {

struct PrintFmt {
    const char* name;
    const char* fields;
    const char* print;
};

// Linux 6.18's formats of common storm events, and a few made up to reach every conversion.
const PrintFmt kCompiled[] = {
    {"sched_waking", kSchedWakeupFields,
     "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu"},
    {"sched_migrate_task",
     "\tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n"
     "\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
     "\tfield:int prio;\toffset:16;\tsize:4;\tsigned:1;\n"
     "\tfield:int orig_cpu;\toffset:20;\tsize:4;\tsigned:1;\n"
     "\tfield:int dest_cpu;\toffset:24;\tsize:4;\tsigned:1;\n",
     "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", __get_str(comm), REC->pid, REC->prio, "
     "REC->orig_cpu, "
     "REC->dest_cpu"},
    {"sched_stat_runtime",
     "\tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n"
     "\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
     "\tfield:u64 runtime;\toffset:16;\tsize:8;\tsigned:0;\n",
     "\"comm=%s pid=%d runtime=%Lu [ns]\", __get_str(comm), REC->pid, (unsigned long long)REC->runtime"},
    {"sys_exit",
     "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n"
     "\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n",
     "\"NR %ld = %ld\", REC->id, REC->ret"},
    {"sys_enter_read",
     "\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
     "\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n"
     "\tfield:char * buf;\toffset:24;\tsize:8;\tsigned:0;\n"
     "\tfield:size_t count;\toffset:32;\tsize:8;\tsigned:0;\n",
     "\"fd: 0x%08lx, buf: 0x%08lx, count: 0x%08lx\", ((unsigned long)(REC->fd)), ((unsigned "
     "long)(REC->buf)), "
     "((unsigned long)(REC->count))"},
    {"made_up_lengths",
     "\tfield:char c;\toffset:8;\tsize:1;\tsigned:1;\n"
     "\tfield:short h;\toffset:10;\tsize:2;\tsigned:1;\n"
     "\tfield:int i;\toffset:12;\tsize:4;\tsigned:1;\n"
     "\tfield:unsigned int u;\toffset:16;\tsize:4;\tsigned:0;\n"
     "\tfield:u64 l;\toffset:24;\tsize:8;\tsigned:0;\n"
     "\tfield:char name[8];\toffset:32;\tsize:8;\tsigned:0;\n",
     "\"%hhd %hd %hu %d %i %u %x %X %o %5d|%-5d|%#x %.3d %lu %lld %llu %zu %zd 100%% %-10s| %.3s %5s\", "
     "REC->c, REC->h, REC->h, REC->i, REC->u, REC->u, REC->i, REC->u, REC->u, REC->c, REC->h, "
     "REC->u, REC->c, REC->l, REC->l, REC->i, REC->l, REC->l, REC->name, REC->name, REC->name"},
    {"made_up_casts",
     "\tfield:int i;\toffset:8;\tsize:4;\tsigned:1;\n"
     "\tfield:u64 l;\toffset:16;\tsize:8;\tsigned:0;\n",
     "\"%lx %ld %u %d %llx %lu %ld\", (unsigned long)REC->i, (long)REC->i, (unsigned int)REC->l, (int)REC->l, "
     "(u64)REC->l, (unsigned int)REC->l, (int)REC->l"},
};

// Formats with something else than fields under plain conversions: libtraceevent's.
const PrintFmt kNotCompiled[] = {
    {"pointer", "\tfield:void * p;\toffset:8;\tsize:8;\tsigned:0;\n", "\"p=%p\", REC->p"},
    {"ternary", "\tfield:int ret;\toffset:8;\tsize:4;\tsigned:1;\n",
     "\"ret=%s\", REC->ret ? \"handled\" : \"unhandled\""},
    {"symbolic", "\tfield:int vec;\toffset:8;\tsize:4;\tsigned:1;\n",
     "\"vec=%d [action=%s]\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 1, \"TIMER\" })"},
    {"escape", "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n", "\"v=%d\\n\", REC->v"},
    {"arithmetic", "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n", "\"v=%d\", REC->v + 1"},
    {"star_width", "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n", "\"v=%*d\", 4, REC->v"},
    {"plus_flag", "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n", "\"v=%+d\", REC->v"},
    {"space_flag", "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n", "\"v=% d\", REC->v"},
    {"cast_to_short", "\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n", "\"v=%d\", (short)REC->v"},
};

}  // namespace

// Each format compiles to `kind` and renders every random record as libtraceevent does.
template <size_t N>
void expect_print_fmts(const PrintFmt (&fmts)[N], FastInfo::Kind kind) {
    Tep tep;
    int id = 500;
    for (const PrintFmt& p : fmts) {
        SCOPED_TRACE(p.name);
        tep_event* ev = perfprof::unit::parse_format(tep, "test", p.name, id++, p.fields, p.print);
        ASSERT_NE(ev, nullptr);
        EXPECT_EQ(perfprof::tep::compile_print_fmt(*ev).kind, kind);
        expect_same_as_libtraceevent(tep, ev, kind);
    }
}

TEST(FastInfo, PrintFmtsOfFieldsPrintAsLibtraceevent) {
    expect_print_fmts(kCompiled, FastInfo::Kind::Format);
}

TEST(FastInfo, OtherPrintFmtsAreLeftToLibtraceevent) {
    expect_print_fmts(kNotCompiled, FastInfo::Kind::None);
}

TEST(FastInfo, DynamicStringOutsideTheRecordIsLeftToLibtraceevent) {
    Tep tep;
    tep_event* ev =
        perfprof::unit::parse_format(tep, "test", "dyn", 700, kCompiled[1].fields, kCompiled[1].print);
    ASSERT_NE(ev, nullptr);
    const FastInfo fi = perfprof::tep::compile_print_fmt(*ev);
    std::vector<uint8_t> r(40, 'x');
    const uint32_t loc = 8u << 16 | 36;  // 8 bytes at 36: past the end, and no NUL
    std::memcpy(r.data() + 8, &loc, 4);
    std::string out = "kept";
    EXPECT_FALSE(perfprof::tep::render_fast_info(fi, r.data(), uint32_t(r.size()), out));
    EXPECT_EQ(out, "kept");
}
