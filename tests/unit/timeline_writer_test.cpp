// output::TimelineWriter (--timeline): JSON escaping, microsecond numbers, the streamed file
// and its completion, the tracks' metadata and the fields of a record as args.
#include "output/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/text.h"
#include "fake_context.h"
#include "perf-prof/error.h"

namespace perfprof::output {
namespace {

std::string esc(std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
}

std::string us(uint64_t ns) {
    std::string out;
    append_us(out, ns);
    return out;
}

TEST(TimelineJson, EscapesQuotesBackslashAndControls) {
    EXPECT_EQ(esc("plain name"), "\"plain name\"");
    EXPECT_EQ(esc("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(esc("l1\nl2\tt\r"), "\"l1\\nl2\\tt\\r\"");
    EXPECT_EQ(esc(std::string_view("\x01\x1f\0x", 4)), "\"\\u0001\\u001f\\u0000x\"");
    EXPECT_EQ(esc(""), "\"\"");
}

TEST(TimelineJson, KeepsValidUtf8AndReplacesInvalidBytes) {
    EXPECT_EQ(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
              "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    EXPECT_EQ(esc("a\xff"
                  "b"),
              "\"a\\ufffdb\"");                                              // never valid
    EXPECT_EQ(esc("\xc3"), "\"\\ufffd\"");                                   // cut sequence at the end
    EXPECT_EQ(esc("\xc0\xaf"), "\"\\ufffd\\ufffd\"");                        // overlong '/'
    EXPECT_EQ(esc("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");             // a UTF-16 surrogate
    EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
    EXPECT_EQ(esc("\x80z"), "\"\\ufffdz\"");                                 // a lone continuation byte
}

TEST(TimelineJson, MicrosecondsKeepEveryNanosecond) {
    EXPECT_EQ(us(0), "0");
    EXPECT_EQ(us(1000), "1");
    EXPECT_EQ(us(1500), "1.5");
    EXPECT_EQ(us(1), "0.001");
    EXPECT_EQ(us(12345), "12.345");
    EXPECT_EQ(us(10010), "10.01");
    EXPECT_EQ(us(18446744073709551615ull), "18446744073709551.615");
}

class TimelineFile : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/timeline_test_XXXXXX";
        const int fd = mkstemp(tmpl);
        ASSERT_GE(fd, 0);
        ::close(fd);
        path = tmpl;
    }
    void TearDown() override { ::unlink(path.c_str()); }
    std::string read() { return core::read_file_or_empty(path); }
    std::string path;
};

TEST_F(TimelineFile, EmptyRunIsAValidTrace) {
    { TimelineWriter w(path); }  // the destructor completes it
    EXPECT_EQ(read(), "{\"traceEvents\":[\n],\"displayTimeUnit\":\"ns\"}\n");
}

TEST_F(TimelineFile, EventsWithArgs) {
    TimelineWriter w(path);
    w.complete("RD", 10, 11, 1'000'500, 2'000);
    w.arg("begin", "sched:sched_wakeup");
    w.arg("cpu", int64_t(-1));
    w.end();
    w.instant("sample", 10, 12, 3'000'000);
    w.begin_array("stack");
    w.array_item("leaf");
    w.array_item("main");
    w.end_array();
    w.arg_u("period", 18446744073709551615ull);
    w.end();
    w.instant("bare", 1, 1, 7);
    w.end();
    w.thread_name(10, 11, "worker \"1\"");
    w.process_name(10, "app");
    w.complete("nested", 1, 2, 0, 0);
    w.begin_object("begin");
    w.arg("pid", int64_t(5));
    w.begin_array("list");  // left open: end() closes both
    w.end();
    EXPECT_EQ(w.events(), 6u);
    w.close();
    w.instant("after close", 1, 1, 1);  // dropped
    w.arg("k", "v");
    w.end();
    w.close();
    EXPECT_EQ(read(),
              "{\"traceEvents\":[\n"
              "{\"ph\":\"X\",\"name\":\"RD\",\"pid\":10,\"tid\":11,\"ts\":1000.5,\"dur\":2,"
              "\"args\":{\"begin\":\"sched:sched_wakeup\",\"cpu\":-1}},\n"
              "{\"ph\":\"i\",\"name\":\"sample\",\"pid\":10,\"tid\":12,\"ts\":3000,\"s\":\"t\","
              "\"args\":{\"stack\":[\"leaf\",\"main\"],\"period\":18446744073709551615}},\n"
              "{\"ph\":\"i\",\"name\":\"bare\",\"pid\":1,\"tid\":1,\"ts\":0.007,\"s\":\"t\"},\n"
              "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":10,\"tid\":11,\"ts\":0,"
              "\"args\":{\"name\":\"worker \\\"1\\\"\"}},\n"
              "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":10,\"tid\":10,\"ts\":0,"
              "\"args\":{\"name\":\"app\"}},\n"
              "{\"ph\":\"X\",\"name\":\"nested\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\":0,"
              "\"args\":{\"begin\":{\"pid\":5,\"list\":[]}}}\n"
              "],\"displayTimeUnit\":\"ns\"}\n");
}

TEST_F(TimelineFile, StreamsInsteadOfHoldingTheRun) {
    TimelineWriter w(path);
    const std::string name(100, 'n');
    for (int i = 0; i < 5000; i++) {
        w.instant(name, 1, 2, uint64_t(i));
        w.end();
    }
    // ~600 KB of events: all but the last 64 KiB reach the file before close(), written by
    // the writer's thread.
    size_t before = 0;
    for (int i = 0; i < 500 && (before = read().size()) < 500'000; i++) ::usleep(10'000);
    EXPECT_GT(before, 500'000u);
    w.close();
    const std::string all = read();
    EXPECT_LT(all.size() - before, 64u * 1024 + 200);
    const std::string tail = "}\n],\"displayTimeUnit\":\"ns\"}\n";
    EXPECT_EQ(all.substr(all.size() - tail.size()), tail);
}

TEST_F(TimelineFile, BadPathsAreErrors) {
    EXPECT_THROW(TimelineWriter("/nonexistent-dir/x.json"), Error);
    EXPECT_THROW(TimelineWriter("/tmp"), Error);
    EXPECT_THROW(TimelineWriter(""), Error);
}

int fake_tgid(int tid) {
    return tid == 7 ? -1 : tid / 10 * 10;  // 21, 22 -> 20; 7: gone
}

TEST_F(TimelineFile, TracksAreNamedOnce) {
    unit::FakeContext ctx("WALL", 1, [](uint32_t tid) { return "t" + std::to_string(tid); });
    {
        TimelineWriter w(path);
        TimelineTracks tracks(w, ctx, fake_tgid);
        EXPECT_EQ(tracks.pid(21), 20u);
        EXPECT_EQ(tracks.pid(22), 20u);
        EXPECT_EQ(tracks.pid(21), 20u);
        EXPECT_EQ(tracks.pid(7), 7u);
        EXPECT_EQ(tracks.size(), 3u);
        EXPECT_EQ(w.events(), 5u);  // two processes, three threads
    }
    const std::string s = read();
    EXPECT_NE(s.find("\"name\":\"process_name\",\"pid\":20,\"tid\":20,\"ts\":0,\"args\":{\"name\":\"t20\"}"),
              std::string::npos);
    EXPECT_NE(s.find("\"name\":\"thread_name\",\"pid\":20,\"tid\":22,\"ts\":0,\"args\":{\"name\":\"t22\"}"),
              std::string::npos);
    EXPECT_NE(s.find("\"name\":\"process_name\",\"pid\":7,\"tid\":7,"), std::string::npos);
}

TEST_F(TimelineFile, TracksForgetPastTheirBound) {
    unit::FakeContext ctx("WALL", 1, [](uint32_t) { return std::string("x"); });
    TimelineWriter w(path);
    TimelineTracks tracks(w, ctx, nullptr);
    for (uint32_t tid = 1; tid <= TimelineTracks::kMaxThreads + 10; tid++) tracks.pid(tid);
    EXPECT_EQ(tracks.size(), 10u);
}

TEST_F(TimelineFile, FieldsOfARecord) {
    EventSpec ev;
    auto field = [](const char* name, uint32_t off, uint32_t size) {
        Field f;
        f.name = name;
        f.offset = off;
        f.size = size;
        return f;
    };
    ev.fields.push_back(field("common_pid", 4, 4));
    Field comm = field("comm", 8, 8);
    comm.is_string = true;
    ev.fields.push_back(comm);
    Field pid = field("pid", 16, 4);
    pid.is_signed = true;
    ev.fields.push_back(pid);
    ev.fields.push_back(field("flags", 20, 2));
    Field arr = field("bytes", 22, 2);
    arr.is_array = true;
    ev.fields.push_back(arr);
    Field dyn = field("name", 24, 4);
    dyn.is_dynamic = true;
    dyn.is_string = true;
    ev.fields.push_back(dyn);
    ev.fields.push_back(field("beyond", 60, 8));  // past the record: left out

    uint8_t raw[40] = {};
    std::memcpy(raw + 8, "a\"b\n", 4);
    const int32_t neg = -3;
    std::memcpy(raw + 16, &neg, 4);
    raw[20] = 0xff;
    raw[21] = 0xff;
    raw[22] = 0xab;
    raw[23] = 0x01;
    const uint32_t loc = (4u << 16) | 28;  // 4 bytes at 28
    std::memcpy(raw + 24, &loc, 4);
    std::memcpy(raw + 28, "dyn", 4);

    Sample s;
    s.event = &ev;
    s.raw = raw;
    s.raw_size = sizeof raw;
    {
        TimelineWriter w(path);
        w.instant("e", 1, 1, 0);
        append_field_args(w, s);
        w.end();
    }
    EXPECT_NE(read().find("\"args\":{\"comm\":\"a\\\"b\\n\",\"pid\":-3,\"flags\":65535,\"bytes\":\"ab01\","
                          "\"name\":\"dyn\"}}"),
              std::string::npos)
        << read();
}

}  // namespace
}  // namespace perfprof::output
