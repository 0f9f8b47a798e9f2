// The session with profilers of the test's own making (a ProfilerFactory) and a nested one
// resolved by the test (a NestedResolver): no registry, no command line. Each run is in a
// child process, since a session takes the process's signals and stdout buffering; the
// result comes back through a pipe. Needs perf_event_open (root).
#include "perf/session.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "core/text.h"
#include "perf-prof/error.h"
#include "perf-prof/read_values.h"
#include "shell.h"

using namespace perfprof;

namespace {

// The cpu-clock, sampled every `period` ns of CPU time.
EventSpec cpu_clock(uint64_t period) {
    EventSpec ev;
    ev.name = "cpu-clock";
    ev.kind = EventKind::Other;
    ev.attr.size = sizeof ev.attr;
    ev.attr.type = PERF_TYPE_SOFTWARE;
    ev.attr.config = PERF_COUNT_SW_CPU_CLOCK;
    ev.attr.sample_period = period;
    ev.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    return ev;
}

// Counts its samples, and those forwarded by a nested child; writes them at finish().
class Counting final : public Profiler {
public:
    Counting(Context& ctx, int out, bool nest) : ctx_(ctx), out_(out), nest_(nest) {}

    EventPlan plan() override {
        EventPlan p;
        p.events.push_back(cpu_clock(200'000));  // 0.2 ms of CPU time
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

namespace {

// A group (a sampling cpu-clock leader reading its members: a counting page-fault event
// and a counting cpu-clock) and a tracepoint that starts disabled and gets its filter at run
// time: what hrcount, stat and watchdog plan (SPEC-PROFILERS §P9, §P10, §P20).
class Grouped final : public Profiler {
public:
    Grouped(Context& ctx, int out) : ctx_(ctx), out_(out) {}

    EventPlan plan() override {
        EventPlan p;
        EventSpec lead = soft("cpu-clock", PERF_COUNT_SW_CPU_CLOCK);
        lead.attr.sample_period = 1'000'000;  // 1 ms of CPU time
        lead.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_READ;
        lead.attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
        p.events.push_back(lead);
        EventSpec faults = soft("page-faults", PERF_COUNT_SW_PAGE_FAULTS);
        faults.group_leader = 0;
        faults.attr.read_format = PERF_FORMAT_ID;
        p.events.push_back(faults);
        EventSpec clock = soft("task-clock", PERF_COUNT_SW_TASK_CLOCK);
        clock.group_leader = 0;
        clock.attr.read_format = PERF_FORMAT_ID;
        p.events.push_back(clock);
        EventSpec tp;
        tp.sys = "sched";
        tp.name = "sched_process_exec";
        tp.attr.size = sizeof tp.attr;
        tp.attr.type = PERF_TYPE_TRACEPOINT;
        tp.attr.config =
            std::stoull(core::read_file_or_empty("/sys/kernel/tracing/events/sched/sched_process_exec/id"));
        tp.attr.sample_period = 1;
        tp.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        tp.start_disabled = true;
        p.events.push_back(tp);
        p.interval_ms = 20;
        p.tick_ms = 10;
        return p;
    }
    void sample(const Sample& s) noexcept override {
        if (s.event_index != 0) return;
        ReadValues r(s.read, s.read_words, s.event->attr.read_format);
        if (r.ok() && r.size() == 3 && r.id(1) && r.id(2)) grouped_++;
    }
    void interval() override { intervals_++; }
    void tick() override {
        if (ticks_++ == 0) {
            filter_ = ctx_.set_filter(3, -1, "common_pid == 0");
            refiled_ = ctx_.set_filter(3, -1, "common_pid == 1");  // the kernel takes one filter
            ctx_.enable_event(3, true);
        }
    }
    void finish() override {
        // The command's events are per CPU (it is followed: inherit): its time is the sum.
        bool read = true;
        size_t members = 0;
        uint64_t clock = 0;
        for (int i = 0; i < ctx_.instances(); i++) {
            std::vector<uint64_t> w;
            read &= ctx_.read_counter(0, i, w);
            ReadValues r(w.data(), w.size(), PERF_FORMAT_GROUP | PERF_FORMAT_ID);
            members = r.size();
            if (r.size() == 3) clock += r.value(2);
        }
        const std::string line = "grouped " + std::to_string(grouped_ > 0) + " read " + std::to_string(read) +
                                 " members " + std::to_string(members) + " clock " +
                                 std::to_string(clock > 0) + " ticks " + std::to_string(ticks_ > 1) +
                                 " intervals " + std::to_string(intervals_ > 0) + " filter '" + filter_ +
                                 "' again " + std::to_string(!refiled_.empty()) + " instances " +
                                 std::to_string(ctx_.instances() == ctx_.cpu_count()) + "\n";
        core::write_all(out_, line);
    }

private:
    static EventSpec soft(const char* name, uint64_t config) {
        EventSpec e;
        e.name = name;
        e.kind = EventKind::Other;
        e.attr.size = sizeof e.attr;
        e.attr.type = PERF_TYPE_SOFTWARE;
        e.attr.config = config;
        return e;
    }

    Context& ctx_;
    int out_;
    uint64_t grouped_ = 0, intervals_ = 0, ticks_ = 0;
    std::string filter_ = "unset", refiled_;
};

}  // namespace

TEST(Session, GroupsTicksDefaultIntervalAndRunTimeFilters) {
    const std::string got = in_child([](int out) {
        Options opt;
        opt.workload = {"/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"};
        perf::Session s(
            perf::DeviceSpec{"top", [out](Context& c) { return std::make_unique<Grouped>(c, out); }, opt});
        EXPECT_EQ(s.run(), 0);
    });
    EXPECT_EQ(got, "grouped 1 read 1 members 3 clock 1 ticks 1 intervals 1 filter '' again 1 instances 1\n");
}

namespace {

// Counts the context-switch records of the launched command and asks now() at the end.
class Switches final : public Profiler {
public:
    Switches(Context& ctx, int out) : ctx_(ctx), out_(out) {}

    EventPlan plan() override {
        EventSpec ev = cpu_clock(1'000'000'000);  // no samples to speak of: the records are the point
        ev.attr.context_switch = 1;
        EventPlan p;
        p.events.push_back(std::move(ev));
        p.order = true;
        return p;
    }
    void sample(const Sample&) noexcept override {}
    void context_switch(const ContextSwitch& c) noexcept override {
        if (ctx_.threads().empty() || c.tid != uint32_t(ctx_.threads()[0])) return;
        ++(c.out ? outs_ : ins_);
        ordered_ &= c.time >= last_;
        last_ = c.time;
    }
    void finish() override {
        const uint64_t now = ctx_.now();
        const std::string line = "outs " + std::to_string(outs_ >= 5) + " ins " + std::to_string(ins_ >= 5) +
                                 " ordered " + std::to_string(ordered_) + " now " +
                                 std::to_string(now >= last_ && now - last_ < 5'000'000'000ull) + "\n";
        core::write_all(out_, line);
    }

private:
    Context& ctx_;
    int out_;
    uint64_t outs_ = 0, ins_ = 0, last_ = 0;
    bool ordered_ = true;
};

}  // namespace

TEST(Session, ContextSwitchRecordsAndTheTimeNowReachTheProfiler) {
    const std::string got = in_child([](int out) {
        Options opt;
        // Five 10 ms sleeps: each a switch-out and a switch-in of the command.
        opt.workload = {
            (std::filesystem::path(test::self_exe()).parent_path() / "workloads" / "sleeper").string(), "5",
            "10", "0"};
        perf::Session s(
            perf::DeviceSpec{"top", [out](Context& c) { return std::make_unique<Switches>(c, out); }, opt});
        EXPECT_EQ(s.run(), 0);
    });
    EXPECT_EQ(got, "outs 1 ins 1 ordered 1 now 1\n");
}
