// PERF_SAMPLE_READ, IP, ADDR and REGS_INTR decoding (lib/perf/record), ReadValues over both
// read_format layouts, and the words of a takes_words profiler (lib/cli/parser).
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli/parser.h"
#include "perf-prof/error.h"
#include "perf-prof/read_values.h"
#include "perf/record.h"

namespace perfprof {
namespace {

std::vector<uint8_t> record(const std::vector<uint64_t>& body) {
    std::vector<uint8_t> rec(sizeof(perf_event_header) + body.size() * 8);
    std::memcpy(rec.data() + sizeof(perf_event_header), body.data(), body.size() * 8);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, uint16_t(rec.size())};
    std::memcpy(rec.data(), &h, sizeof(h));
    return rec;
}

const perf_event_header& header(const std::vector<uint8_t>& rec) {
    return *reinterpret_cast<const perf_event_header*>(rec.data());
}

TEST(ReadValues, GroupWithIdsAndTimes) {
    const uint64_t fmt = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
                         PERF_FORMAT_TOTAL_TIME_RUNNING;
    const std::vector<uint64_t> w = {3, 1000, 900, 11, 101, 22, 102, 33, 103};
    ReadValues r(w.data(), w.size(), fmt);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r.time_enabled(), 1000u);
    EXPECT_EQ(r.time_running(), 900u);
    EXPECT_EQ(r.value(0), 11u);
    EXPECT_EQ(r.id(0), 101u);
    EXPECT_EQ(r.value(2), 33u);
    EXPECT_EQ(r.id(2), 103u);
    // One word short: not ok, no values.
    ReadValues cut(w.data(), w.size() - 1, fmt);
    EXPECT_FALSE(cut.ok());
    EXPECT_EQ(cut.size(), 0u);
}

TEST(ReadValues, SingleLayouts) {
    const std::vector<uint64_t> plain = {42};
    ReadValues a(plain.data(), plain.size(), 0);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a.size(), 1u);
    EXPECT_EQ(a.value(0), 42u);
    EXPECT_EQ(a.id(0), 0u);
    // value, time_enabled, time_running, id
    const std::vector<uint64_t> full = {42, 7, 6, 99};
    ReadValues b(full.data(), full.size(),
                 PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.value(0), 42u);
    EXPECT_EQ(b.time_enabled(), 7u);
    EXPECT_EQ(b.time_running(), 6u);
    EXPECT_EQ(b.id(0), 99u);
    const std::vector<uint64_t> group_plain = {2, 5, 6};
    ReadValues g(group_plain.data(), group_plain.size(), PERF_FORMAT_GROUP);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g.size(), 2u);
    EXPECT_EQ(g.value(1), 6u);
    EXPECT_FALSE(ReadValues(nullptr, 0, 0).ok());
}

TEST(DecodeSample, IpAddrGroupReadAndInterruptRegisters) {
    perf_event_attr a{};
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU |
                    PERF_SAMPLE_READ | PERF_SAMPLE_REGS_INTR;
    a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
    a.sample_regs_intr = 0b1011;  // three registers
    const std::vector<uint64_t> body = {
        0xffffffff81000010ull,      // ip
        (uint64_t(8) << 32) | 7,    // pid 7, tid 8
        5000,                       // time
        0x7fff0000,                 // addr
        2,                          // cpu 2
        2, 10, 1001, 20, 1002,      // group read: nr 2, (value, id) x 2
        PERF_SAMPLE_REGS_ABI_64,    // regs abi
        0xa, 0xb, 0xc,              // regs
    };
    const std::vector<uint8_t> rec = record(body);
    Sample s;
    ASSERT_TRUE(perf::decode_sample(header(rec), a, s));
    EXPECT_EQ(s.ip, 0xffffffff81000010ull);
    EXPECT_EQ(s.pid, 7u);
    EXPECT_EQ(s.tid, 8u);
    EXPECT_EQ(s.addr, 0x7fff0000u);
    EXPECT_EQ(s.cpu, 2u);
    EXPECT_EQ(s.read_words, 5u);
    EXPECT_EQ(s.read_value, 10u);
    ReadValues r(s.read, s.read_words, a.read_format);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r.value(1), 20u);
    EXPECT_EQ(r.id(1), 1002u);
    EXPECT_EQ(s.intr_abi, uint64_t(PERF_SAMPLE_REGS_ABI_64));
    ASSERT_NE(s.intr_regs, nullptr);
    EXPECT_EQ(s.intr_regs[2], 0xcu);

    // A group read claiming more counters than the record holds is refused.
    std::vector<uint64_t> bad = body;
    bad[5] = 1000;
    Sample t;
    EXPECT_FALSE(perf::decode_sample(header(record(bad)), a, t));
}

TEST(DecodeSample, SingleReadWithTimes) {
    perf_event_attr a{};
    a.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_READ;
    a.read_format = PERF_FORMAT_ID;
    const std::vector<uint8_t> rec = record({77, 123, 456});
    Sample s;
    ASSERT_TRUE(perf::decode_sample(header(rec), a, s));
    EXPECT_EQ(s.time, 77u);
    EXPECT_EQ(s.read_value, 123u);
    EXPECT_EQ(ReadValues(s.read, s.read_words, a.read_format).id(0), 456u);
}

const ProfilerInfo kWords{
    .name = "words",
    .summary = "Demo profiler with words",
    .usage = "[OPTION...] WORD...",
    .options = {{Opt::Event, nullptr}},
    .takes_words = true,
};
const ProfilerInfo kPlain{
    .name = "plain",
    .summary = "Demo profiler with a workload",
    .options = {{Opt::Event, nullptr}},
};
const std::vector<const ProfilerInfo*> kWordsRegistry{&kWords, &kPlain};

TEST(ParserWords, WordsAndOptionsInterleaved) {
    cli::Parsed p = cli::parse({"words", "-e", "sched:sched_wakeup", "1<<order", "-v", "second", "-N", "3"},
                               kWordsRegistry);
    EXPECT_EQ(p.action, cli::Action::Run);
    EXPECT_EQ(p.opt.words, (std::vector<std::string>{"1<<order", "second"}));
    EXPECT_TRUE(p.opt.workload.empty());
    EXPECT_EQ(p.opt.verbose, 1);
    EXPECT_EQ(p.opt.exit_n, 3u);
    ASSERT_EQ(p.opt.events.size(), 1u);
    // After "--" everything is a word, options included.
    cli::Parsed q = cli::parse({"words", "a", "--", "-v", "b"}, kWordsRegistry);
    EXPECT_EQ(q.opt.words, (std::vector<std::string>{"a", "-v", "b"}));
    EXPECT_EQ(q.opt.verbose, 0);
    // -h after a word is still help; the help word still works.
    EXPECT_EQ(cli::parse({"words", "x", "-h"}, kWordsRegistry).action, cli::Action::ProfilerHelp);
    EXPECT_EQ(cli::parse({"words", "-e", "sched:sched_wakeup", "help"}, kWordsRegistry).action,
              cli::Action::HelpWord);
    // Other profilers keep their workload.
    cli::Parsed w = cli::parse({"plain", "ls", "-l"}, kWordsRegistry);
    EXPECT_EQ(w.opt.workload, (std::vector<std::string>{"ls", "-l"}));
    EXPECT_TRUE(w.opt.words.empty());
    // An unknown option among the words is an error.
    EXPECT_THROW(cli::parse({"words", "x", "--bogus"}, kWordsRegistry), Error);
}

}  // namespace
}  // namespace perfprof
