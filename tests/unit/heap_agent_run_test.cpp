// Real workloads run under the heap agent (perf-prof-heap.so: LD_PRELOAD, or loaded by the
// workload itself as the injector would make it), their channel drained by AgentChannel, and
// what was recorded checked against what each workload is known to do: exact counts, the leaked
// blocks and their stacks, fork, C++ new/delete and exceptions, threads, sampling, inject mode
// (GOT slots patched, restored, a second session), heartbeat, detach and the exit scan.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "heap/agent_channel.h"
#include "shell.h"

using namespace perfprof::heap;
namespace fs = std::filesystem;

namespace {

// The real path: /proc/PID/maps names the file so (the sanitizer build's workloads are a symlink).
std::string workload(const std::string& name) {
    return fs::weakly_canonical(fs::path(perfprof::test::self_exe()).parent_path() / "workloads" / name).string();
}

// perf-prof-heap.so: beside the test binary (a SAN build's), else at the repository's root.
std::string agent_path() {
    const fs::path dir = fs::path(perfprof::test::self_exe()).parent_path();
    for (const fs::path& p : {dir / "perf-prof-heap.so", dir.parent_path() / "perf-prof-heap.so",
                              dir.parent_path().parent_path() / "perf-prof-heap.so"})
        if (fs::exists(p)) return fs::canonical(p).string();
    return {};
}

struct AgentRun {
    std::vector<pph_rec> recs, recs2;
    int status = -1;
    std::string out;
    bool exit_waited = false;  // the agent waited at exit (PPH_F_EXIT_SCAN)
    uint32_t exit_tid = 0;
    uint64_t exit_sp = 0;
    bool exit_sp_on_stack = false;
    uint64_t exe_base = 0;  // the workload's load address, read from /proc while it waited
};

uint64_t load_base(int pid, const std::string& exe) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string range, perms, off, dev, ino, path;
        ls >> range >> perms >> off >> dev >> ino >> path;
        if (path == exe && std::stoull(off, nullptr, 16) == 0) return std::stoull(range, nullptr, 16);
    }
    return 0;
}

bool on_stack(int pid, uint64_t sp) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(in, line)) {
        if (line.find("[stack]") == std::string::npos) continue;
        const uint64_t lo = std::stoull(line, nullptr, 16),
                       hi = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
        return sp >= lo && sp < hi;
    }
    return false;
}

// Runs argv with the agent preloaded on channel `ch`, draining it until the process ended.
// Without `live`, the ring is read only once the process ended, the heartbeat is not renewed and
// nobody lets a process waiting at exit go on.
// Without `preload`, the process loads the agent itself (heap_inject).
// `second`: another channel of the same process (a second attach), drained into recs2.
AgentRun run_under_agent(AgentChannel& ch, const std::vector<std::string>& argv, bool live = true,
                         bool preload = true, AgentChannel* second = nullptr) {
    AgentRun r;
    std::vector<std::string> env_s;
    for (char** e = environ; *e; e++)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) && std::strncmp(*e, PPH_ENV "=", sizeof PPH_ENV))
            env_s.push_back(*e);
    if (preload) {
        env_s.push_back("LD_PRELOAD=" + agent_path());
        env_s.push_back(std::string(PPH_ENV) + "=" + ch.path());
    }
    std::vector<char*> envp, args;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_s = argv;
    for (auto& s : argv_s) args.push_back(s.data());
    args.push_back(nullptr);
    int release[2], out[2];
    if (::pipe(release) || ::pipe(out)) return r;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(release[1]);
        ::close(out[0]);
        char c;
        if (::read(release[0], &c, 1) != 1) ::_exit(126);
        ::dup2(out[1], 1);
        ::execve(args[0], args.data(), envp.data());
        ::_exit(127);
    }
    ::close(release[0]);
    ::close(out[1]);
    ch.header()->target_pid = pid;  // before the process may map the channel
    if (second) second->header()->target_pid = pid;
    if (::write(release[1], "x", 1) != 1) return r;
    ::close(release[1]);
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    auto collect = [&] {
        if (!live && r.status == -1) return;
        ch.drain([&](const pph_rec& rec) { r.recs.push_back(rec); });
        if (second) second->drain([&](const pph_rec& rec) { r.recs2.push_back(rec); });
        char buf[4096];
        ssize_t n;
        while ((n = ::read(out[0], buf, sizeof buf)) > 0) r.out.append(buf, size_t(n));
    };
    for (int i = 0; i < 30000; i++) {  // 30 s at most
        collect();
        pph_header* h = ch.header();
        if (live && __atomic_load_n(&h->exit_state, __ATOMIC_ACQUIRE) == PPH_EXIT_WAITING && !r.exit_waited) {
            r.exit_waited = true;
            r.exit_tid = h->exit_tid;
            r.exit_sp = h->exit_sp;
            r.exit_sp_on_stack = on_stack(pid, r.exit_sp);
            r.exe_base = load_base(pid, argv[0]);
            ch.finish_exit_scan();
        }
        int st;
        if (::waitpid(pid, &st, WNOHANG) == pid) {
            r.status = st;
            break;
        }
        ::usleep(1000);
    }
    if (r.status == -1) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    collect();
    ::close(out[0]);
    return r;
}

// The workload's function symbols (nm), to name the return addresses of the stacks.
struct Symbols {
    std::map<uint64_t, std::string> by_addr;
    explicit Symbols(const std::string& exe) {
        std::istringstream in(perfprof::test::run("nm -C " + exe));
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream ls(line);
            std::string addr, type, name;
            if (ls >> addr >> type >> name && (type == "T" || type == "t"))
                by_addr[std::stoull(addr, nullptr, 16)] = name;
        }
    }
    std::string name(uint64_t a) const {
        auto it = by_addr.upper_bound(a);
        return it == by_addr.begin() ? "?" : std::prev(it)->second;
    }
};

struct Outstanding {
    std::map<uint64_t, pph_rec> live;  // ptr → its ALLOC
    uint64_t allocs = 0, frees = 0, unknown_frees = 0;
    std::map<uint16_t, uint64_t> allocs_by_fn, frees_by_fn;
    explicit Outstanding(const std::vector<pph_rec>& recs) {
        for (const pph_rec& r : recs) {
            if (r.type == PPH_REC_ALLOC) {
                allocs++;
                allocs_by_fn[r.fn]++;
                live[r.ptr] = r;
            } else if (r.type == PPH_REC_FREE) {
                frees++;
                frees_by_fn[r.fn]++;
                unknown_frees += live.erase(r.ptr) == 0;
            }
        }
    }
    std::map<uint64_t, uint64_t> sizes() const {  // size → blocks
        std::map<uint64_t, uint64_t> m;
        for (auto& [p, r] : live) m[r.size]++;
        return m;
    }
};

constexpr int kSmall = 3, kBig = 2, kRounds = 200;
constexpr uint64_t kAllocs = 6 * 2 * kRounds + kSmall + kBig + 5, kFrees = 6 * 2 * kRounds;

TEST(HeapAgentRun, FullModeRecordsEveryCallOfLeaks) {
    ASSERT_FALSE(agent_path().empty()) << "perf-prof-heap.so not built";
    AgentChannel ch({.flags = PPH_F_EXIT_SCAN});
    const std::string exe = workload("leaks");
    AgentRun r =
        run_under_agent(ch, {exe, std::to_string(kSmall), std::to_string(kBig), std::to_string(kRounds)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status << " " << ch.error();
    EXPECT_EQ(r.out, "leaks done\n");
    const pph_header* h = ch.header();
    EXPECT_EQ(h->state, uint32_t(PPH_STATE_RECORDING)) << ch.error();
    EXPECT_EQ(h->agent_pid, h->target_pid);
    // The agent's own memory, never roots of the leak scan: the channel, then its segments.
    EXPECT_EQ(h->agent_ranges[0].end - h->agent_ranges[0].start, h->map_size);
    EXPECT_LT(h->agent_ranges[3].start, h->agent_ranges[3].end);
    EXPECT_EQ(h->dropped_records, 0u);
    EXPECT_EQ(h->dropped_stacks, 0u);
    Outstanding o(r.recs);
    EXPECT_EQ(o.allocs, kAllocs);
    EXPECT_EQ(o.frees, kFrees);
    EXPECT_EQ(h->calls_alloc, kAllocs);
    EXPECT_EQ(h->calls_free, kFrees);
    EXPECT_EQ(o.unknown_frees, 0u);
    // What is left: the leaks and the reachable list, nothing else.
    EXPECT_EQ(o.sizes(), (std::map<uint64_t, uint64_t>{{48, kSmall}, {64, 5}, {4096, kBig}}));
    EXPECT_EQ(o.allocs_by_fn[PPH_FN_CALLOC], 2u * kRounds + kBig);
    EXPECT_EQ(o.allocs_by_fn[PPH_FN_REALLOC], 2u * kRounds);
    EXPECT_EQ(o.allocs_by_fn[PPH_FN_POSIX_MEMALIGN], 2u * kRounds);
    EXPECT_EQ(o.frees_by_fn[PPH_FN_REALLOC], 2u * kRounds);
    // The exit scan: the agent waited in the exiting thread, on its stack.
    EXPECT_TRUE(r.exit_waited);
    EXPECT_EQ(r.exit_tid, uint32_t(h->target_pid));
    EXPECT_TRUE(r.exit_sp_on_stack) << std::hex << r.exit_sp;
    EXPECT_EQ(h->exit_state, uint32_t(PPH_EXIT_DONE));
    // Each leaked block's stack starts in the function that allocated it, called from its path.
    ASSERT_NE(r.exe_base, 0u);
    const Symbols syms(exe);
    std::map<uint64_t, std::set<std::string>> callers;  // size → "leaf<-caller"
    for (auto& [p, rec] : o.live) {
        auto s = ch.stack(rec.stack);
        ASSERT_GE(s.size(), 2u) << "size " << rec.size;
        callers[rec.size].insert(syms.name(s[0] - r.exe_base) + "<-" + syms.name(s[1] - 1 - r.exe_base));
    }
    EXPECT_EQ(callers[48], (std::set<std::string>{"leak_small_alloc<-leak_small_path"}));
    EXPECT_EQ(callers[4096], (std::set<std::string>{"leak_big_alloc<-leak_big_path"}));
    EXPECT_EQ(callers[64], (std::set<std::string>{"keep_list<-main"}));
}

TEST(HeapAgentRun, SampledModeKeepsBigBlocksAndPairsFrees) {
    ASSERT_FALSE(agent_path().empty());
    // 256 bytes: a 4096-byte block is kept with probability 1 - exp(-16), a 48-byte one 17 %.
    AgentChannel ch({.mode = PPH_SAMPLED, .rate = 256});
    AgentRun r = run_under_agent(
        ch, {workload("leaks"), std::to_string(kSmall), std::to_string(kBig), std::to_string(kRounds)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << ch.error();
    const pph_header* h = ch.header();
    Outstanding o(r.recs);
    EXPECT_EQ(o.unknown_frees, 0u);  // only kept blocks' frees are recorded
    EXPECT_GT(o.frees, 0u);
    EXPECT_LT(o.allocs, kAllocs);
    EXPECT_EQ(h->calls_alloc, kAllocs);  // every call counted, kept or not
    EXPECT_EQ(h->calls_free, kFrees);
    auto sizes = o.sizes();
    EXPECT_EQ(sizes[4096], uint64_t(kBig));
    EXPECT_LE(sizes[48], uint64_t(kSmall));
    EXPECT_LE(sizes[64], 5u);
    for (auto& [size, n] : sizes) EXPECT_TRUE(size == 48 || size == 64 || size == 4096) << size;
    for (auto& [p, rec] : o.live) EXPECT_NE(rec.stack, 0u);
}

// heap_sampled keeps 64 MiB live in blocks of known sizes: the kept blocks scaled back by their
// probability (size / (1 - exp(-size/rate))) sum to the live bytes within 5 standard deviations
// of that estimator (its variance: the sum of size^2 (1 - p) / p over the live blocks).
TEST(HeapAgentRun, SampledLiveBytesScaleBack) {
    ASSERT_FALSE(agent_path().empty());
    const uint64_t rate = 64 << 10, mib = 64;
    AgentChannel ch({.mode = PPH_SAMPLED, .rate = rate});
    AgentRun r = run_under_agent(ch, {workload("heap_sampled"), std::to_string(mib)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << ch.error();
    EXPECT_EQ(ch.header()->dropped_records, 0u);
    auto p_of = [&](double size) { return 1 - std::exp(-size / double(rate)); };
    double live = 0, var = 0;
    for (uint64_t i = 0; live < double(mib << 20); i++) {
        const double size = double(64 + (i * 977) % 16000), p = p_of(size);
        live += size;
        var += size * size * (1 - p) / p;
    }
    Outstanding o(r.recs);
    EXPECT_EQ(o.unknown_frees, 0u);
    double est = 0;
    for (auto& [ptr, rec] : o.live) est += double(rec.size) / p_of(double(rec.size));
    EXPECT_NEAR(est, live, 5 * std::sqrt(var)) << "sd " << std::sqrt(var);
}

TEST(HeapAgentRun, ForkedChildAndExecdProcessAreNotRecorded) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    AgentRun r = run_under_agent(ch, {workload("heap_fork"), "4", "6"});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << ch.error();
    EXPECT_EQ(r.out, "heap_fork done\n");
    Outstanding o(r.recs);
    EXPECT_EQ(o.sizes(), (std::map<uint64_t, uint64_t>{{24, 8}}));
    EXPECT_EQ(o.frees, 0u);
    EXPECT_EQ(ch.header()->calls_alloc, 8u);
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_RECORDING));  // /bin/true left the channel alone
    EXPECT_EQ(ch.error(), "");
}

TEST(HeapAgentRun, CxxNewDeleteAndBadAllocThroughTheHook) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    const int rounds = 50, leaks = 3;
    AgentRun r = run_under_agent(ch, {workload("heap_cxx"), std::to_string(rounds), std::to_string(leaks)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status << " " << ch.error();
    EXPECT_EQ(r.out, "heap_cxx done\n");
    Outstanding o(r.recs);
    EXPECT_EQ(o.allocs_by_fn[PPH_FN_NEW], uint64_t(6 * 2 * rounds + leaks));
    EXPECT_EQ(o.frees_by_fn[PPH_FN_DELETE], uint64_t(6 * 2 * rounds));
    uint64_t new_live = 0;
    for (auto& [p, rec] : o.live)
        if (rec.fn == PPH_FN_NEW) {
            new_live++;
            EXPECT_EQ(rec.size, 72u);
        }
    EXPECT_EQ(new_live, uint64_t(leaks));
}

TEST(HeapAgentRun, StaleHeartbeatTurnsTheAgentOff) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    ch.header()->heartbeat_ns = 1;  // perf-prof "gone" long ago: off at the first check
    AgentRun r = run_under_agent(ch, {workload("leaks"), "1", "1", "2000"}, false);
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_OFF));
    // Recorded until the first check (4096 calls of the thread), nothing after.
    EXPECT_GT(r.recs.size(), 0u);
    EXPECT_LE(r.recs.size(), 4096u);
}

TEST(HeapAgentRun, BadChannelFailsWithAReason) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    ch.header()->version = 99;
    AgentRun r = run_under_agent(ch, {workload("leaks"), "1", "1", "10"}, false);
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_FAILED));
    EXPECT_NE(ch.error().find("version"), std::string::npos) << ch.error();
    EXPECT_TRUE(r.recs.empty());
}

class HeapAgentInject : public testing::TestWithParam<const char*> {};

// heap_inject (position-dependent, its PLT entry malloc's canonical address) and heap_inject_pie.
TEST_P(HeapAgentInject, PatchesAndRestoresTheSlots) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    const int n = 4;
    AgentChannel ch2({});
    AgentRun r =
        run_under_agent(ch, {workload(GetParam()), agent_path(), ch.path(), std::to_string(n), ch2.path()},
                        true, false, &ch2);
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status << " " << ch.error();
    EXPECT_EQ(r.out, "heap_inject done\n");
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_OFF));
    int ranges = 0;  // the channel, the agent's segments, the saved-slot table
    for (const pph_range& g : ch.header()->agent_ranges) ranges += g.start < g.end;
    EXPECT_GE(ranges, 3);
    Outstanding o(r.recs);
    auto sizes = o.sizes();
    // Sizes of their own: the loader's allocations are recorded too (a position-dependent program
    // that takes malloc's address hands the loader its PLT entry, through the patched slot).
    EXPECT_EQ(sizes[3056], uint64_t(n));  // the program's own calls
    EXPECT_EQ(sizes[3088], uint64_t(n));  // from the library dlopen'd after the attach
    EXPECT_EQ(sizes[3002], 1u);           // strdup: libc calls malloc through its own GOT
    EXPECT_EQ(sizes[3001], 1u);
    EXPECT_EQ(sizes.count(3032), 0u);  // before the attach
    EXPECT_EQ(sizes.count(3120), 0u);  // after the detach
    EXPECT_EQ(sizes.count(3016), 0u);
    for (auto& [p, rec] : o.live)
        EXPECT_TRUE((rec.size != 3056 && rec.size != 3088) || !ch.stack(rec.stack).empty()) << rec.size;
    // The second session: its own blocks only, on its own channel, and off again.
    EXPECT_EQ(sizes.count(3099), 0u);
    EXPECT_EQ(ch2.state(), uint32_t(PPH_STATE_OFF)) << ch2.error();
    auto sizes2 = Outstanding(r.recs2).sizes();
    EXPECT_EQ(sizes2[3099], uint64_t(n));
    for (uint64_t other : {3056, 3088, 3120, 3016}) EXPECT_EQ(sizes2.count(other), 0u) << other;
}
INSTANTIATE_TEST_SUITE_P(HeapAgentWorkloads, HeapAgentInject,
                         testing::Values("heap_inject", "heap_inject_pie"));

// pthread_create allocates the new thread's TLS descriptors (glibc): blocks that are neither the
// workload's nor freed before exit; the checks below count the workload's own sizes.
TEST(HeapAgentRun, ThreadsFullModeExact) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    const int threads = 4, rounds = 20000, leaks = 3;
    AgentRun r = run_under_agent(ch, {workload("heap_threads"), std::to_string(threads),
                                      std::to_string(rounds), std::to_string(leaks)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << ch.error();
    const pph_header* h = ch.header();
    EXPECT_EQ(h->dropped_records, 0u);
    Outstanding o(r.recs);
    EXPECT_EQ(o.unknown_frees, 0u);
    EXPECT_EQ(o.sizes()[200], uint64_t(threads * leaks));
    EXPECT_EQ(h->calls_alloc, o.allocs);
    EXPECT_EQ(h->calls_free, o.frees);
    EXPECT_GE(o.frees, uint64_t(threads) * rounds);
    EXPECT_LE(o.frees, uint64_t(threads) * rounds + 16);  // glibc's own, for the threads
}

TEST(HeapAgentRun, ThreadsSampledModeCountsEveryCall) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({.mode = PPH_SAMPLED, .rate = 64 << 10});
    const int threads = 4, rounds = 20000, leaks = 3;
    AgentRun r = run_under_agent(ch, {workload("heap_threads"), std::to_string(threads),
                                      std::to_string(rounds), std::to_string(leaks)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << ch.error();
    const pph_header* h = ch.header();
    Outstanding o(r.recs);
    EXPECT_EQ(o.unknown_frees, 0u);
    // Each thread's batched counts were flushed when it ended (or at exit, the main thread's).
    EXPECT_GE(h->calls_alloc, uint64_t(threads) * (rounds + leaks));
    EXPECT_LE(h->calls_alloc, uint64_t(threads) * (rounds + leaks) + 16);
    EXPECT_GE(h->calls_free, uint64_t(threads) * rounds);
    EXPECT_LE(h->calls_free, uint64_t(threads) * rounds + 16);
    // Kept: a sum of independent Bernoulli draws, p = 1 - exp(-size/rate) per allocation; within
    // 5 of its standard deviations, and a few of glibc's own allocations for the threads.
    double mean = 0, var = 0;
    auto add = [&](double size, double times) {
        const double p = 1 - std::exp(-size / double(64 << 10));
        mean += times * p;
        var += times * p * (1 - p);
    };
    for (int i = 0; i < rounds; i++) add(16 + (i & 511), threads);
    add(200, threads * leaks);
    EXPECT_GT(double(o.allocs), mean - 5 * std::sqrt(var)) << mean;
    EXPECT_LT(double(o.allocs), mean + 5 * std::sqrt(var) + 4) << mean;
}

TEST(HeapAgentRun, DetachRequestTurnsTheAgentOff) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    ch.header()->detach = 1;
    AgentRun r = run_under_agent(ch, {workload("leaks"), "1", "1", "2000"});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_OFF));
    EXPECT_LE(r.recs.size(), 4096u);
    EXPECT_EQ(ch.header()->calls_alloc, Outstanding(r.recs).allocs);
}

// perf-prof gone while the process waits at exit for the scan: it goes on exiting once the
// heartbeat is older than the time-out, never later.
TEST(HeapAgentRun, ExitScanGivesUpWhenPerfProfIsGone) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({.flags = PPH_F_EXIT_SCAN});
    const auto t0 = std::chrono::steady_clock::now();
    AgentRun r = run_under_agent(ch, {workload("leaks"), "1", "1", "10"}, false);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    EXPECT_EQ(ch.header()->exit_state, uint32_t(PPH_EXIT_DONE));
    EXPECT_GE(s, 2.5);
    EXPECT_LT(s, PPH_HEARTBEAT_TIMEOUT_NS / 1e9 + 2.0);
}

TEST(HeapAgentRun, NonPieExecutableTakingMallocsAddress) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    AgentRun r = run_under_agent(ch, {workload("heap_nopie"), "5"});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << ch.error();
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_RECORDING));
    EXPECT_EQ(Outstanding(r.recs).sizes()[33], 10u);
}

}  // namespace
