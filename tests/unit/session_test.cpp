// The session with profilers of the test's own making (a ProfilerFactory) and a nested one
// resolved by the test (a NestedResolver): no registry, no command line. Each run is in a
// child process, since a session takes the process's signals and stdout buffering; the
// result comes back through a pipe. Needs perf_event_open (root).
#include "perf/session.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "core/text.h"
#include "perf-prof/error.h"

using namespace perfprof;

namespace {

// Counts its samples, and those forwarded by a nested child; writes them at finish().
class Counting final : public Profiler {
public:
    Counting(Context& ctx, int out, bool nest) : ctx_(ctx), out_(out), nest_(nest) {}

    EventPlan plan() override {
        EventSpec ev;
        ev.name = "cpu-clock";
        ev.kind = EventKind::Other;
        ev.attr.size = sizeof ev.attr;
        ev.attr.type = PERF_TYPE_SOFTWARE;
        ev.attr.config = PERF_COUNT_SW_CPU_CLOCK;
        ev.attr.sample_period = 200'000;  // 0.2 ms of CPU time
        ev.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        EventPlan p;
        p.events.push_back(std::move(ev));
        if (nest_) p.nested.push_back({"child", "-x", {}});
        return p;
    }
    void sample(const Sample& s) noexcept override { ++(s.from ? forwarded_ : own_); }
    void finish() override {
        if (out_ < 0) return;
        const std::string line = "own " + std::to_string(own_ > 0) + " forwarded " +
                                 std::to_string(forwarded_ > 0) + " threads " +
                                 std::to_string(ctx_.threads().size()) + "\n";
        core::write_all(out_, line);
    }

private:
    Context& ctx_;
    int out_;
    bool nest_;
    uint64_t own_ = 0, forwarded_ = 0;
};

// Runs `body` in a child; returns what it wrote to the pipe.
std::string in_child(const std::function<void(int out)>& body) {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(p[0]);
        try {
            body(p[1]);
        } catch (const std::exception& e) {
            core::write_all(p[1], std::string("error: ") + e.what() + "\n");
        }
        std::fflush(nullptr);
        ::_exit(0);
    }
    ::close(p[1]);
    std::string got = core::read_fd(p[0]);
    ::close(p[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    return got;
}

Options spinning_command() {
    Options opt;
    opt.workload = {"/bin/sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"};
    return opt;
}

}  // namespace

TEST(Session, RunsAProfilerFromAFactoryUntilTheCommandEnds) {
    const std::string got = in_child([](int out) {
        perf::Session s(
            perf::DeviceSpec{"top", [out](Context& c) { return std::make_unique<Counting>(c, out, false); },
                             spinning_command()});
        EXPECT_EQ(s.run(), 0);
    });
    EXPECT_EQ(got, "own 1 forwarded 0 threads 1\n");
}

TEST(Session, NestedProfilersComeFromTheResolver) {
    const std::string got = in_child([](int out) {
        std::string asked;
        auto resolve = [&](const NestedSpec& n, const std::string& parent) {
            asked = n.profiler + " " + n.options + " in " + parent;
            Options o;
            o.pids = "1";  // replaced by the parent's attachment
            return perf::DeviceSpec{"child",
                                    [](Context& c) { return std::make_unique<Counting>(c, -1, false); }, o};
        };
        perf::Session s(
            perf::DeviceSpec{"top", [out](Context& c) { return std::make_unique<Counting>(c, out, true); },
                             spinning_command()},
            resolve);
        EXPECT_EQ(s.run(), 0);
        core::write_all(out, asked + "\n");
    });
    EXPECT_EQ(got, "own 1 forwarded 1 threads 1\nchild -x in top\n");
}

TEST(Session, ANestedProfilerWithoutAResolverIsAnError) {
    const std::string got = in_child([](int out) {
        perf::Session s(
            perf::DeviceSpec{"top", [out](Context& c) { return std::make_unique<Counting>(c, out, true); },
                             spinning_command()});
        s.run();
    });
    EXPECT_EQ(got, "error: profiler child cannot be nested in top\n");
}
