// lib/sym/debuginfod: when a run asks the servers, what it says and when it stops asking, with
// a scripted fetch in place of libdebuginfod (the real client and server: test_debuginfod.py).
#include "sym/debuginfod.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace perfprof::sym {
namespace {

// A FILE* whose text the test reads back.
struct Capture {
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    ~Capture() {
        std::fclose(f);
        std::free(buf);
    }
    std::string text() {
        std::fflush(f);
        return std::string(buf, len);
    }
};

// Answers with the per-id results of `table` ("" -> -ENOENT), counting the requests.
struct Server {
    std::atomic<int> calls{0};
    int err = 0;  // when non-zero: every request fails with it
    std::chrono::milliseconds delay{0};

    Debuginfod::Fetch fetch() {
        return [this](const std::string& id, std::string* path) {
            ++calls;
            std::this_thread::sleep_for(delay);
            if (err) return -err;
            if (id.starts_with("00")) return -ENOENT;
            *path = "/cache/" + id + "/debuginfo";
            return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        };
    }
};

TEST(DebuginfodTest, NoUrlsNeverAsks) {
    Server s;
    Capture err;
    Debuginfod d({.urls = "", .fetch = s.fetch(), .err = err.f});
    EXPECT_FALSE(d.enabled());
    EXPECT_EQ(d.debug_file("abcd", "/bin/x"), "");
    EXPECT_EQ(s.calls, 0);
    EXPECT_EQ(err.text(), "");
}

TEST(DebuginfodTest, EachBuildIdAskedOnce) {
    Server s;
    Capture err;
    Debuginfod d({.urls = "http://h", .fetch = s.fetch(), .err = err.f});
    EXPECT_EQ(d.known("abcd"), "");
    EXPECT_EQ(d.debug_file("abcd", "/bin/x"), "/cache/abcd/debuginfo");
    EXPECT_EQ(d.debug_file("abcd", "/lib/y"), "/cache/abcd/debuginfo");
    EXPECT_EQ(d.known("abcd"), "/cache/abcd/debuginfo");
    EXPECT_EQ(d.debug_file("", "/bin/noid"), "");  // no build-id: nothing to ask
    EXPECT_EQ(s.calls, 1);
    EXPECT_EQ(d.requests(), 1u);
    EXPECT_EQ(err.text(), "");
}

TEST(DebuginfodTest, NotOnServerIsQuietAndOthersStillAsked) {
    Server s;
    Capture err;
    Debuginfod d({.urls = "http://h", .fetch = s.fetch(), .err = err.f});
    EXPECT_EQ(d.debug_file("0012", "/bin/x"), "");
    EXPECT_EQ(d.debug_file("0012", "/bin/x"), "");  // not asked again
    EXPECT_EQ(d.debug_file("abcd", "/bin/y"), "/cache/abcd/debuginfo");
    EXPECT_EQ(s.calls, 2);
    EXPECT_EQ(err.text(), "");
}

TEST(DebuginfodTest, UnreachableSaysSoOnceAndStopsAsking) {
    Server s;
    s.err = ECONNREFUSED;
    Capture err;
    Debuginfod d({.urls = "http://127.0.0.1:1", .fetch = s.fetch(), .err = err.f});
    for (const char* id : {"aa01", "aa02", "aa03", "aa01"}) EXPECT_EQ(d.debug_file(id, "/bin/x"), "");
    EXPECT_EQ(s.calls, 1);
    EXPECT_EQ(err.text(), "perf-prof: debuginfod: http://127.0.0.1:1: Connection refused\n");
}

TEST(DebuginfodTest, ErrorsThatStopTheRun) {
    EXPECT_FALSE(debuginfod_unreachable(ENOENT));
    EXPECT_FALSE(debuginfod_unreachable(EFBIG));
    for (int e : {ECONNREFUSED, EHOSTUNREACH, ETIME, ECONNRESET, EINVAL, EACCES, ELIBACC})
        EXPECT_TRUE(debuginfod_unreachable(e)) << e;
}

TEST(DebuginfodTest, MissingLibraryIsOneLine) {
    Server s;
    s.err = ELIBACC;
    Capture err;
    Debuginfod d({.urls = "http://h", .fetch = s.fetch(), .err = err.f});
    d.debug_file("aa01", "/bin/x");
    d.debug_file("aa02", "/bin/y");
    EXPECT_EQ(err.text(), "perf-prof: debuginfod: cannot load libdebuginfod.so.1 (install libdebuginfod1)\n");
}

TEST(DebuginfodTest, VerboseNotesGoToTheLog) {
    Server s;
    Capture err, log;
    Debuginfod d({.urls = "http://h", .fetch = s.fetch(), .err = err.f});
    d.set_verbose(1, log.f);
    d.set_verbose(0, stdout);  // a quieter symbolizer made later does not silence it
    d.debug_file("abcd", "/bin/x");
    d.debug_file("0012", "/bin/y");
    const std::string t = log.text();
    EXPECT_NE(t.find("debuginfod: debug info of /bin/x (build-id abcd): from the cache or http://h\n"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("debuginfod: /bin/x: /cache/abcd/debuginfo ("), std::string::npos) << t;
    EXPECT_NE(t.find("debuginfod: /bin/y: not on the servers\n"), std::string::npos) << t;
    EXPECT_EQ(err.text(), "");
}

// serve's jobs symbolize on several threads: one request per build-id, every thread gets its
// answer.
TEST(DebuginfodTest, ConcurrentAsksShareOneRequest) {
    Server s;
    s.delay = std::chrono::milliseconds(50);
    Capture err;
    Debuginfod d({.urls = "http://h", .fetch = s.fetch(), .err = err.f});
    std::vector<std::string> got(8);
    std::vector<std::thread> ts;
    for (size_t i = 0; i < got.size(); i++)
        ts.emplace_back([&, i] { got[i] = d.debug_file(i % 2 ? "abcd" : "ef01", "/bin/x"); });
    for (auto& t : ts) t.join();
    for (size_t i = 0; i < got.size(); i++)
        EXPECT_EQ(got[i], i % 2 ? "/cache/abcd/debuginfo" : "/cache/ef01/debuginfo");
    EXPECT_EQ(s.calls, 2);
}

}  // namespace
}  // namespace perfprof::sym
