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
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shell.h"
#include "sym/object.h"
#include "unwind/cfi_table.h"

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

// Which objects ask (tests/fixtures' variants): only one with a build-id and no .symtab of its
// own, in MiniDebugInfo or in a local debug file; and what it gets is used for its symbols and
// its CFI. The server's answer is the fixture's debug file under its debug root.
class ObjectAsks : public ::testing::Test {
protected:
    void SetUp() override {
        if (!std::filesystem::exists(test::fixture(".ok")))
            GTEST_SKIP() << "fixtures missing: run `make unit` (tests/fixtures/build.sh)";
        Debuginfod::override_process(&d_);
    }
    void TearDown() override { Debuginfod::override_process(nullptr); }

    // The object of a fresh copy of fixture `name` (no object cache shares it), its separate
    // debug files looked for under `root`.
    std::shared_ptr<Object> object(const std::string& name, const std::string& root) {
        const std::string copy = dir_ + "/" + name;
        std::filesystem::copy_file(test::fixture(name), copy,
                                   std::filesystem::copy_options::overwrite_existing);
        return get_object(copy, {}, root);
    }
    static uint64_t nm_address(const std::string& file, const std::string& fn) {
        const std::string out = test::run("nm '" + file + "' | grep ' [tT] " + fn + "$'");
        return out.empty() ? 0 : std::stoull(out, nullptr, 16);
    }

    std::vector<std::string> asked_;
    Debuginfod d_{{.urls = "http://h", .fetch = [this](const std::string& id, std::string* path) {
                       asked_.push_back(id);
                       *path = test::fixture("debugroot/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) +
                                             ".debug");
                       return ::open(path->c_str(), O_RDONLY | O_CLOEXEC);
                   }}};
    std::string dir_ = [] {
        char t[] = "/tmp/debuginfod_test.XXXXXX";
        return std::string(::mkdtemp(t));
    }();
    ~ObjectAsks() override { std::filesystem::remove_all(dir_); }
};

TEST_F(ObjectAsks, StrippedWithoutLocalDebugFileAsksAndIsNamed) {
    auto obj = object("c_debugid", "/nonexistent");
    const uint64_t helper = nm_address(test::fixture("c_debugid.full"), "static_helper");
    ASSERT_NE(helper, 0u);
    const Symbol* s = obj->find(helper);
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(s->name, "static_helper");
    EXPECT_FALSE(obj->stripped());
    EXPECT_EQ(asked_, std::vector<std::string>{obj->build_id()});
    EXPECT_NE(d_.known(obj->build_id()), "");
}

TEST_F(ObjectAsks, LocalSourcesAreNotAsked) {
    EXPECT_FALSE(object("c_debugid", test::fixture("debugroot"))->stripped());  // by build-id
    EXPECT_FALSE(object("c_plain", "/nonexistent")->stripped());                // .symtab
    EXPECT_FALSE(object("c_minidebug", "/nonexistent")->stripped());            // MiniDebugInfo
    EXPECT_TRUE(asked_.empty());
}

TEST_F(ObjectAsks, CfiFromTheServedDebugFrame) {
    // Its functions' CFI is only in the .debug_frame of its debug file.
    auto local = object("c_debugframe_id", test::fixture("debugroot"));
    const size_t want = local->cfi().fde_count();
    Debuginfod off({});  // whatever DEBUGINFOD_URLS says
    Debuginfod::override_process(&off);
    auto none = object("c_debugframe_id", "/nonexistent");
    const size_t without = none->cfi().fde_count();
    Debuginfod::override_process(&d_);
    EXPECT_GT(want, without);
    EXPECT_TRUE(asked_.empty());
    auto served = object("c_debugframe_id", "/nonexistent");
    EXPECT_EQ(served->cfi().fde_count(), want);
    EXPECT_EQ(asked_.size(), 1u);
}

}  // namespace
}  // namespace perfprof::sym
