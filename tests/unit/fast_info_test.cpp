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

// Random records of `ev`: any bytes in the comms (NUL-terminated or not), any field values.
std::vector<std::vector<uint8_t>> random_records(tep_event* ev, int n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<uint8_t>> out;
    for (int i = 0; i < n; i++) {
        std::vector<uint8_t> r(72);  // the largest format here is 64 bytes
        for (auto& b : r) b = uint8_t(rng());
        const uint16_t type = uint16_t(ev->id);
        std::memcpy(r.data(), &type, 2);
        for (tep_format_field* f = ev->format.fields; f; f = f->next) {
            uint8_t* p = r.data() + f->offset;
            if (f->flags & TEP_FIELD_IS_ARRAY) {
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
    EXPECT_EQ(perfprof::tep::plan_fast_info(*wg).kind, FastInfo::Kind::None);
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
