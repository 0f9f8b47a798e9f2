// The injector, Freeze and ContinueGuard on real processes (root): build/workloads/inject_target
// runs, build/workloads/libinject_probe.so is loaded into it and called; the target must go on
// exactly as an untouched run (its output and exit code), whatever we did to it and whenever
// the injecting process was killed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/text.h"
#include "heap/agent_channel.h"
#include "heap/injector.h"
#include "perf-prof/error.h"
#include "perf/proc_tasks.h"
#include "shell.h"

using namespace perfprof;
using perfprof::heap::call_in_process;

// gcc says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

namespace {

namespace fs = std::filesystem;

std::string workload(const std::string& name) {
    return (fs::path(test::self_exe()).parent_path() / "workloads" / name).string();
}

std::string probe() {
    return workload("libinject_probe.so");
}

// A running inject_target with its stdin and stdout as pipes; killed if still alive at the end.
class Target {
public:
    explicit Target(const std::vector<std::string>& args, const std::string& exe = workload("inject_target")) {
        int in[2], out[2];
        EXPECT_EQ(::pipe(in), 0);
        EXPECT_EQ(::pipe(out), 0);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::close(in[1]);
            ::close(out[0]);
            std::vector<char*> argv{const_cast<char*>(exe.c_str())};
            for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(exe.c_str(), argv.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        in_ = in[1];
        out_ = ::fdopen(out[0], "r");
    }
    ~Target() {
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (in_ >= 0) ::close(in_);
        if (out_) std::fclose(out_);
    }
    int pid() const { return pid_; }
    // The first line ("ready"): the target is about to do what the test injects into.
    std::string line() {
        char buf[512];
        if (!std::fgets(buf, sizeof buf, out_)) return {};
        std::string s(buf);
        if (!s.empty() && s.back() == '\n') s.pop_back();
        return s;
    }
    void write_stdin(const std::string& s) { EXPECT_EQ(::write(in_, s.data(), s.size()), ssize_t(s.size())); }
    // The rest of its output and its exit status (-signal when killed).
    std::pair<std::string, int> finish() {
        std::string rest;
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, out_)) > 0) rest.append(buf, n);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        reaped_ = true;
        return {rest, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st)};
    }

private:
    int pid_ = -1, in_ = -1;
    FILE* out_ = nullptr;
    bool reaped_ = false;
};

// The state letters of every thread of `pid`.
std::string thread_states(int pid) {
    std::string s;
    for (int tid : perf::tasks_of(pid)) s += perf::task_state(tid);
    return s;
}

bool wait_until(const std::function<bool()>& cond, int ms) {
    for (int i = 0; i < ms; i++) {
        if (cond()) return true;
        ::usleep(1000);
    }
    return cond();
}

bool running(int pid) {
    const std::string s = thread_states(pid);
    return !s.empty() && s.find_first_of("tT") == std::string::npos;
}

std::string temp_path(const std::string& name) {
    return (fs::temp_directory_path() / ("injector_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

constexpr const char* kSpinRounds = "1500000000";

}  // namespace

TEST(Injector, CallsTheFunctionWithItsStringInATargetBlockedInRead) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    ASSERT_TRUE(wait_until([&] { return perf::task_state(t.pid()) == 'S'; }, 2000));
    const std::string file = temp_path("write");
    heap::InjectStats st;
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_write", file + "|hello from perf-prof", &st), 20);
    EXPECT_EQ(core::read_file_or_empty(file), "hello from perf-prof\n");
    EXPECT_GT(st.stopped_ns, 0u);
    EXPECT_GE(st.total_ns, st.stopped_ns);
    // Loaded once: the second and third calls find it mapped and reach the same static.
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_count", ""), 1);
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_count", ""), 2);
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_tid", ""), t.pid());  // the one thread
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_vector", ""), 1);
    // The interrupted read is restarted, not failed: it returns the bytes written now.
    EXPECT_TRUE(running(t.pid()));
    t.write_stdin("abc");
    auto [out, code] = t.finish();
    EXPECT_EQ(out, "got 3 abc\n");
    EXPECT_EQ(code, 3);
    ::unlink(file.c_str());
}

TEST(Injector, ASleepInterruptedByCallsCompletesItsTime) {
    Target t({"sleep", "700"});
    ASSERT_EQ(t.line(), "ready");
    ASSERT_TRUE(wait_until([&] { return perf::task_state(t.pid()) == 'S'; }, 2000));
    ::usleep(100'000);
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_vector", ""), 1);
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_count", ""), 1);
    auto [out, code] = t.finish();
    int rc = -1;
    long ms = 0;
    ASSERT_EQ(std::sscanf(out.c_str(), "rc %d elapsed %ld", &rc, &ms), 2) << out;
    EXPECT_EQ(rc, 0);
    EXPECT_GE(ms, 700);   // restarted with its remaining time, not cut short
    EXPECT_LT(ms, 2000);  // nor started over each time
    EXPECT_EQ(code, 4);
}

TEST(Injector, ASpinningTargetEndsAsAnUntouchedRun) {
    Target plain({"spin", kSpinRounds});
    ASSERT_EQ(plain.line(), "ready");
    const auto expected = plain.finish();

    Target t({"spin", kSpinRounds});
    ASSERT_EQ(t.line(), "ready");
    const std::string file = temp_path("spin");
    for (int i = 0; i < 5; i++) {
        // Every call clobbers vector registers the loop keeps its sums in.
        EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_vector", ""), 1);
        EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_write", file + "|x"), 1);
        ::usleep(20'000);
    }
    EXPECT_EQ(t.finish(), expected);
    ::unlink(file.c_str());
}

// A thread that spends its time in malloc and free is taken when it is outside them: a call of
// dlopen from inside the allocator would wait forever for the arena lock its thread holds.
TEST(Injector, AThreadBusyInTheAllocatorIsTakenOutsideIt) {
    Target plain({"alloc", "50000000"});
    ASSERT_EQ(plain.line(), "ready");
    const auto expected = plain.finish();

    Target t({"alloc", "50000000"});
    ASSERT_EQ(t.line(), "ready");
    uint64_t most = 0;
    for (int i = 0; i < 5; i++) {
        heap::InjectStats st;
        EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_count", "", &st, 3000), i + 1);
        most = std::max(most, st.stopped_ns);
        ::usleep(10'000);
    }
    std::printf("injection into a thread busy in malloc: stopped at most %.3f ms\n", double(most) / 1e6);
    EXPECT_EQ(t.finish(), expected);
}

// Other threads run on during the call; the one taken is the main thread, asleep.
TEST(Injector, TheOtherThreadsRunOn) {
    Target t({"threads", "3", "1500"});
    ASSERT_EQ(t.line(), "ready");
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(wait_until([&] { return perf::task_state(t.pid()) == 'S'; }, 2000));
    std::string during;
    // Looked at once the main thread runs the call (on a busy machine the call may take a while
    // to get there), and while it spins.
    std::thread look([&] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        do {
            ::usleep(5'000);
            during = thread_states(t.pid());
        } while (during.substr(0, 1) != "R" && std::chrono::steady_clock::now() < until);
    });
    // Not a sleep: the thread's interrupted usleep keeps its restart block only while the
    // calls made in it do not sleep themselves (a nanosleep resets it).
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_spin", "300"), 8);
    look.join();
    EXPECT_EQ(during.size(), 4u);
    EXPECT_EQ(during.substr(1), "RRR") << during;  // on 2 CPUs some wait their turn: still R
    EXPECT_EQ(during[0], 'R') << during;            // the main thread runs our call
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_tid", ""), t.pid());
    EXPECT_EQ(t.finish(), std::make_pair(std::string("rounds ok\n"), 0));
    // Its usleep was restarted with the time left, not cut short.
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1450));
}

// A process stopped by a signal runs the call and is stopped again afterwards.
TEST(Injector, AStoppedProcessStaysStopped) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    ::kill(t.pid(), SIGSTOP);
    ASSERT_TRUE(wait_until([&] { return thread_states(t.pid()) == "T"; }, 2000));
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_count", ""), 1);
    ::usleep(20'000);
    EXPECT_EQ(thread_states(t.pid()), "T");
    ::kill(t.pid(), SIGCONT);
    t.write_stdin("go");
    EXPECT_EQ(t.finish(), std::make_pair(std::string("got 2 go\n"), 3));
}

// A signal that comes while the thread runs our call is handled once the thread is back in its
// own code: its handler runs once, its read goes on.
TEST(Injector, ASignalDuringTheCallReachesTheProgramAfterIt) {
    Target t({"signals"});
    ASSERT_EQ(t.line(), "ready");
    ASSERT_TRUE(wait_until([&] { return perf::task_state(t.pid()) == 'S'; }, 2000));
    std::thread sender([pid = t.pid()] {
        ::usleep(100'000);
        ::kill(pid, SIGUSR1);
    });
    EXPECT_EQ(call_in_process(t.pid(), probe(), "probe_spin", "300"), 8);
    sender.join();
    ::usleep(50'000);
    t.write_stdin("abcd");
    EXPECT_EQ(t.finish(), std::make_pair(std::string("got 4 usr1 1\n"), 7));
}

TEST(Injector, ACrashInTheFunctionIsAnErrorAndTheTargetGoesOn) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    const std::string e = error_of([&] { call_in_process(t.pid(), probe(), "probe_crash", ""); });
    EXPECT_NE(e.find("probe_crash crashed (Segmentation fault at 0x"), std::string::npos) << e;
    EXPECT_TRUE(running(t.pid()));
    t.write_stdin("ok");
    EXPECT_EQ(t.finish(), std::make_pair(std::string("got 2 ok\n"), 3));
}

TEST(Injector, AFunctionThatDoesNotReturnIsAnErrorAndTheThreadIsRestored) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    heap::InjectStats st;
    const std::string e =
        error_of([&] { call_in_process(t.pid(), probe(), "probe_sleep", "5000", &st, 300); });
    EXPECT_NE(e.find("probe_sleep did not return within 300 ms"), std::string::npos) << e;
    EXPECT_LT(st.total_ns, 3'000'000'000u);
    EXPECT_TRUE(running(t.pid()));
    t.write_stdin("ab");
    EXPECT_EQ(t.finish(), std::make_pair(std::string("got 2 ab\n"), 3));
}

TEST(Injector, ATargetKilledDuringTheCallIsAnErrorNotAHang) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    std::thread killer([pid = t.pid()] {
        ::usleep(200'000);
        ::kill(pid, SIGKILL);
    });
    heap::InjectStats st;
    const std::string e = error_of([&] { call_in_process(t.pid(), probe(), "probe_sleep", "5000", &st); });
    killer.join();
    EXPECT_EQ(e, "cannot inject into process " + std::to_string(t.pid()) + ": it exited");
    EXPECT_LT(st.total_ns, 3'000'000'000u);
    EXPECT_EQ(t.finish().second, -SIGKILL);
}

TEST(Injector, WhatCannotBeInjectedIsAOneLineError) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    const std::string who = "process " + std::to_string(t.pid());
    EXPECT_EQ(error_of([&] { call_in_process(t.pid(), probe(), "no_such_function", ""); }),
              "cannot inject " + probe() + ": it defines no function no_such_function");
    EXPECT_EQ(error_of([&] { call_in_process(t.pid(), "/nonexistent/lib.so", "f", ""); }),
              "cannot inject /nonexistent/lib.so into " + who +
                  ": the process does not see that file (another mount namespace?)");
    // A file dlopen refuses (an executable): the reason is dlerror()'s, read from the target.
    const std::string exe = workload("sleeper");
    const std::string e = error_of([&] { call_in_process(t.pid(), exe, "main", ""); });
    EXPECT_EQ(e.rfind("cannot load " + exe + " into " + who + ": " + exe + ": ", 0), 0u) << e;
    ::kill(t.pid(), SIGKILL);
    t.finish();
    EXPECT_EQ(error_of([&] { call_in_process(t.pid(), probe(), "probe_count", ""); }),
              "cannot inject into " + who + ": no such process");
}

// A program compiled here from `body` (the main of a C file that includes what it needs);
// empty when cc fails (`flags`: -static needs libc.a).
std::string compiled(const std::string& name, const std::string& body, const std::string& flags = "") {
    const std::string src = temp_path(name + ".c"), exe = temp_path(name);
    std::ofstream(src) << "#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n"
                          "#include <sys/prctl.h>\n#include <sys/syscall.h>\n#include <linux/seccomp.h>\n"
                       << body;
    test::run("cc -O1 " + flags + " -o " + exe + " " + src + " 2>&1");
    ::unlink(src.c_str());
    return fs::exists(exe) ? exe : std::string();
}

TEST(Injector, AStaticBinaryHasNoDlopen) {
    const std::string exe = compiled(
        "static", "int main(void) { puts(\"ready\"); fflush(stdout); sleep(10); return 0; }\n", "-static");
    if (exe.empty()) GTEST_SKIP() << "cc -static does not work here (no libc.a)";
    Target t({}, exe);
    ASSERT_EQ(t.line(), "ready");
    EXPECT_EQ(error_of([&] { call_in_process(t.pid(), probe(), "probe_count", ""); }),
              "cannot inject into process " + std::to_string(t.pid()) +
                  ": it is statically linked: no dlopen to load a library with");
    EXPECT_TRUE(running(t.pid()));
    ::unlink(exe.c_str());
}

// Processes our calls would kill: seccomp's strict mode (open or mmap is fatal there), SIGSEGV
// ignored (the kernel would make it fatal when our call returns to address 0).
TEST(Injector, ProcessesTheCallWouldKillAreErrors) {
    const std::string strict = compiled("strict",
                                        "int main(void) { puts(\"ready\"); fflush(stdout);\n"
                                        "  prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT);\n"
                                        "  char c; read(0, &c, 1); write(1, \"done\\n\", 5); syscall(SYS_exit, 5); }\n");
    const std::string ign = compiled("segv_ign",
                                     "int main(void) { signal(SIGSEGV, SIG_IGN); puts(\"ready\"); fflush(stdout);\n"
                                     "  char c; read(0, &c, 1); puts(\"done\"); return 6; }\n");
    ASSERT_FALSE(strict.empty());
    ASSERT_FALSE(ign.empty());
    for (const auto& [exe, why, code] :
         {std::tuple{strict, std::string("it runs in seccomp's strict mode (no open or mmap)"), 5},
          std::tuple{ign, std::string("it ignores SIGSEGV, which ends an injected call"), 6}}) {
        Target t({}, exe);
        ASSERT_EQ(t.line(), "ready");
        ASSERT_TRUE(wait_until([&] { return perf::task_state(t.pid()) == 'S'; }, 2000));
        EXPECT_EQ(error_of([&] { call_in_process(t.pid(), probe(), "probe_count", ""); }),
                  "cannot inject into process " + std::to_string(t.pid()) + ": " + why);
        t.write_stdin("x");
        EXPECT_EQ(t.finish(), std::make_pair(std::string("done\n"), code));
        ::unlink(exe.c_str());
    }
}

// SIGKILL of the process that injects, at random points of its call: the target is never left
// stopped, and ends exactly as an untouched run.
TEST(Injector, SigkillOfTheInjectingProcessLeavesTheTargetRunning) {
    Target plain({"spin", kSpinRounds});
    ASSERT_EQ(plain.line(), "ready");
    const auto expected = plain.finish();

    Target t({"spin", kSpinRounds});
    ASSERT_EQ(t.line(), "ready");
    std::mt19937 rng(std::random_device{}());
    const std::string file = temp_path("kill");
    int killed = 0;
    for (int i = 0; i < 20 && perf::task_alive(t.pid()); i++) {
        const pid_t c = ::fork();
        if (c == 0) {
            try {
                call_in_process(t.pid(), probe(), i % 2 ? "probe_vector" : "probe_sleep", i % 2 ? "" : "3");
                call_in_process(t.pid(), probe(), "probe_write", file + "|x");
            } catch (...) {
            }
            ::_exit(0);
        }
        ::usleep(std::uniform_int_distribution<useconds_t>(0, 4000)(rng));
        ::kill(c, SIGKILL);
        int st = 0;
        ::waitpid(c, &st, 0);
        killed += WIFSIGNALED(st);
        // The injector process it had started finishes its call and lets the thread go.
        EXPECT_TRUE(wait_until([&] { return !perf::task_alive(t.pid()) || running(t.pid()); }, 3000))
            << "round " << i << ": " << thread_states(t.pid());
    }
    EXPECT_GE(killed, 10);
    EXPECT_EQ(t.finish(), expected);
    ::unlink(file.c_str());
}

// Injections into fresh processes: how long the injected thread is away from its own code
// (dlopen of a small library, and one call) and the whole call, median of 20. Printed, not
// asserted: speed belongs in bench/.
TEST(Injector, StoppedTimeOfAnInjection) {
    std::vector<uint64_t> stopped, total;
    for (int i = 0; i < 20; i++) {
        Target t({"read"});
        ASSERT_EQ(t.line(), "ready");
        heap::InjectStats st;
        ASSERT_EQ(call_in_process(t.pid(), probe(), "probe_count", "", &st), 1);
        stopped.push_back(st.stopped_ns);
        total.push_back(st.total_ns);
    }
    std::sort(stopped.begin(), stopped.end());
    std::sort(total.begin(), total.end());
    std::printf("injection (dlopen + call), median of 20: stopped %.3f ms, total %.3f ms\n",
                double(stopped[10]) / 1e6, double(total[10]) / 1e6);
    EXPECT_LE(stopped[10], total[10]);
}

// The heap agent itself (perf-prof-heap.so beside the build's perf-prof): its injection and
// attach (the GOT slots of every object patched), then its detach, into processes whose two
// threads are busy in malloc, as the issue's target counts them: the injected thread's stop,
// median of 20 (each process fresh: dlopen every time). Printed, not asserted.
TEST(Injector, StoppedTimeOfTheAgentsAttachAndDetach) {
    std::string agent;
    for (fs::path p = fs::path(test::self_exe()).parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
        if (fs::exists(p / "perf-prof-heap.so")) {
            agent = (p / "perf-prof-heap.so").string();
            break;
        }
    if (agent.empty()) GTEST_SKIP() << "no perf-prof-heap.so built";
    std::vector<uint64_t> attach, detach, total;
    // 20 rounds; 5 under ASan, where a round takes seconds (the figures are bench/'s business).
    constexpr int kRounds = kAsan ? 5 : 20;
    for (int i = 0; i < kRounds; i++) {
        Target t({"alloc", "100000000"});
        ASSERT_EQ(t.line(), "ready");
        heap::AgentChannelOptions o;
        o.target_pid = t.pid();
        heap::AgentChannel ch(o);
        ch.heartbeat();
        heap::InjectStats a, d;
        ASSERT_EQ(call_in_process(t.pid(), agent, "perfprof_heap_attach", ch.path(), &a), 0) << ch.error();
        EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_RECORDING));
        ch.unlink_path();
        ::usleep(5000);
        EXPECT_GT(ch.drain([](const pph_rec&) {}), 0u);  // it records
        __atomic_store_n(&ch.header()->detach, 1u, __ATOMIC_RELEASE);
        EXPECT_EQ(call_in_process(t.pid(), agent, "perfprof_heap_detach", "", &d), 0);
        attach.push_back(a.stopped_ns);
        detach.push_back(d.stopped_ns);
        total.push_back(a.total_ns);
        EXPECT_TRUE(running(t.pid()));
    }
    for (auto* v : {&attach, &detach, &total}) std::sort(v->begin(), v->end());
    std::printf("agent into 2 threads busy in malloc, median of %d: attach stopped %.3f ms (max %.3f), "
                "total %.3f ms; detach stopped %.3f ms (max %.3f)\n",
                kRounds, double(attach[kRounds / 2]) / 1e6, double(attach.back()) / 1e6,
                double(total[kRounds / 2]) / 1e6, double(detach[kRounds / 2]) / 1e6, double(detach.back()) / 1e6);
}

TEST(Freeze, StopsEveryThreadAndLetsThemGo) {
    Target t({"threads", "4", "1500"});
    ASSERT_EQ(t.line(), "ready");
    {
        heap::Freeze f(t.pid());
        EXPECT_EQ(f.tasks().size(), 5u);
        EXPECT_EQ(thread_states(t.pid()), "ttttt");
        ::usleep(50'000);
        EXPECT_EQ(thread_states(t.pid()), "ttttt");
    }
    EXPECT_TRUE(running(t.pid())) << thread_states(t.pid());
    EXPECT_EQ(t.finish(), std::make_pair(std::string("rounds ok\n"), 0));
}

TEST(Freeze, AStoppedProcessStaysStopped) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    ::kill(t.pid(), SIGSTOP);
    ASSERT_TRUE(wait_until([&] { return thread_states(t.pid()) == "T"; }, 2000));
    {
        heap::Freeze f(t.pid());
        EXPECT_EQ(f.tasks(), std::vector<int>{t.pid()});
    }
    ::usleep(20'000);
    EXPECT_EQ(thread_states(t.pid()), "T");
    ::kill(t.pid(), SIGCONT);
    EXPECT_TRUE(wait_until([&] { return running(t.pid()); }, 2000));
    t.write_stdin("z");
    EXPECT_EQ(t.finish(), std::make_pair(std::string("got 1 z\n"), 3));
}

// The owner of a Freeze killed: the kernel lets every thread go.
TEST(Freeze, SigkillOfItsOwnerLetsTheThreadsGo) {
    Target t({"threads", "3", "1000"});
    ASSERT_EQ(t.line(), "ready");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t owner = ::fork();
    if (owner == 0) {
        heap::Freeze f(t.pid());
        (void)!::write(ready[1], "r", 1);
        ::pause();
        ::_exit(0);
    }
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    EXPECT_EQ(thread_states(t.pid()), "tttt");
    ::kill(owner, SIGKILL);
    ::waitpid(owner, nullptr, 0);
    EXPECT_TRUE(wait_until([&] { return running(t.pid()); }, 2000)) << thread_states(t.pid());
    EXPECT_EQ(t.finish(), std::make_pair(std::string("rounds ok\n"), 0));
    ::close(ready[0]);
    ::close(ready[1]);
}

TEST(Freeze, AGoneProcessIsAnError) {
    const pid_t c = ::fork();
    if (c == 0) ::_exit(0);
    ::waitpid(c, nullptr, 0);
    EXPECT_EQ(error_of([&] { heap::Freeze f(c); }), "cannot stop process " + std::to_string(c) + ": no such process");
}

TEST(ContinueGuard, ContinuesTheProcessWhenItsOwnerIsKilled) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t owner = ::fork();
    if (owner == 0) {
        heap::ContinueGuard g(t.pid());
        ::kill(t.pid(), SIGSTOP);
        (void)!::write(ready[1], "r", 1);
        ::pause();
        ::_exit(0);
    }
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    ASSERT_TRUE(wait_until([&] { return thread_states(t.pid()) == "T"; }, 2000));
    ::usleep(50'000);
    EXPECT_EQ(thread_states(t.pid()), "T");  // the guard alone continues nothing
    ::kill(owner, SIGKILL);
    ::waitpid(owner, nullptr, 0);
    EXPECT_TRUE(wait_until([&] { return running(t.pid()); }, 2000)) << thread_states(t.pid());
    ::close(ready[0]);
    ::close(ready[1]);
}

TEST(ContinueGuard, EndsQuietlyWhenDestroyed) {
    Target t({"read"});
    ASSERT_EQ(t.line(), "ready");
    pid_t child;
    {
        heap::ContinueGuard g(t.pid());
        child = g.child();
        ::kill(t.pid(), SIGSTOP);
        ASSERT_TRUE(wait_until([&] { return thread_states(t.pid()) == "T"; }, 2000));
    }
    EXPECT_FALSE(perf::task_alive(child));
    ::usleep(50'000);
    EXPECT_EQ(thread_states(t.pid()), "T");
    ::kill(t.pid(), SIGCONT);
}
