// The heap agent (lib/heap/agent/, perf-prof-heap.so) and perf-prof's end of its channel
// (lib/heap/agent_channel): the sampler's countdown, the ring under concurrent producers, the
// channel's bounds checks on a mapping the target scribbled on, and real workloads run under
// the agent (LD_PRELOAD), their records drained and checked against what they are known to do.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "heap/agent/ring.h"
#include "heap/agent/sampler.h"
#include "heap/agent_channel.h"
#include "heap/sampling.h"
#include "perf-prof/error.h"
#include "shell.h"

using namespace perfprof::heap;
namespace fs = std::filesystem;

namespace {

// ---- the sampler ----

TEST(HeapAgentSampler, MeanGapIsTheRate) {
    for (uint64_t rate : {uint64_t(4096), uint64_t(512 << 10)}) {
        const std::vector<uint64_t> gaps = sample_gap_quantiles(rate, PPH_GAPS);
        pph_sampler s;
        pph_sampler_seed(&s, gaps.data(), 42);
        const int n = 400000;
        double sum = 0;
        for (int i = 0; i < n; i++) sum += double(pph_sample_gap(&s, gaps.data()));
        // The exponential's standard deviation is its mean: 5 sigma of the mean of n draws, and
        // the table's own bias (its tail is cut at ln(2 * PPH_GAPS) means) of under 0.1 %.
        EXPECT_NEAR(sum / n, double(rate), double(rate) * (5.0 / std::sqrt(n) + 0.001)) << rate;
    }
}

TEST(HeapAgentSampler, KeptFractionPerSize) {
    const uint64_t rate = 64 << 10;
    const std::vector<uint64_t> gaps = sample_gap_quantiles(rate, PPH_GAPS);
    for (uint64_t size : {rate / 64, rate / 8, rate / 2, rate, 3 * rate}) {
        pph_sampler s;
        pph_sampler_seed(&s, gaps.data(), size);
        const int n = 200000;
        int kept = 0;
        for (int i = 0; i < n; i++) kept += pph_sampled(&s, gaps.data(), size);
        // Each allocation is kept independently (the gap is memoryless) with p = 1 - exp(-s/rate):
        // a binomial count, within 5 of its standard deviations (plus one, for p near 1).
        const double p = 1 - std::exp(-double(size) / double(rate));
        const double sd = std::sqrt(n * p * (1 - p));
        EXPECT_NEAR(kept, n * p, 5 * sd + 1 + 0.002 * n * p) << "size " << size;
    }
}

TEST(HeapAgentSampler, SeedsDiffer) {
    const std::vector<uint64_t> gaps = sample_gap_quantiles(1 << 20, PPH_GAPS);
    pph_sampler a, b;
    pph_sampler_seed(&a, gaps.data(), 1);
    pph_sampler_seed(&b, gaps.data(), 2);
    int same = 0;
    for (int i = 0; i < 64; i++) same += pph_sample_gap(&a, gaps.data()) == pph_sample_gap(&b, gaps.data());
    EXPECT_LT(same, 8);
}

// ---- the ring ----

struct Ring {
    std::unique_ptr<pph_header> hp = std::make_unique<pph_header>();
    std::vector<pph_rec> slots;
    pph_header* h = hp.get();
    pph_rec* ring;
    explicit Ring(uint64_t n) : slots(n) {
        h->ring_slots = n;
        ring = slots.data();
        pph_ring_init(ring, n);
    }
};

// 4 producers push `per` records each (ptr = thread << 32 | i); one consumer pops concurrently,
// `consumer_delay_us` between pops. Every record pushed is popped once, in its producer's order;
// every record refused is counted in dropped_records.
void ring_run(uint64_t slots, int per, int consumer_delay_us, bool expect_no_drops) {
    Ring r(slots);
    constexpr int kThreads = 4;
    std::atomic<int> done{0};
    std::vector<std::vector<uint32_t>> pushed(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&, t] {
            for (int i = 0; i < per; i++)
                if (pph_ring_push(r.h, r.ring, uint64_t(t) << 32 | uint32_t(i), uint64_t(i), t, PPH_REC_ALLOC, 0) == 0)
                    pushed[t].push_back(uint32_t(i));
            done++;
        });
    }
    std::vector<std::vector<uint32_t>> popped(kThreads);
    pph_rec rec;
    for (;;) {
        const bool finished = done == kThreads;  // read before the pop: nothing comes after it
        if (pph_ring_pop(r.h, r.ring, &rec)) {
            const uint64_t t = rec.ptr >> 32;
            ASSERT_LT(t, uint64_t(kThreads));
            ASSERT_EQ(rec.size, rec.ptr & 0xffffffffu);
            ASSERT_EQ(rec.stack, t);
            popped[t].push_back(uint32_t(rec.ptr));
            if (consumer_delay_us) ::usleep(consumer_delay_us);
        } else if (finished) {
            break;
        }
    }
    for (auto& t : ts) t.join();
    uint64_t total_pushed = 0;
    for (int t = 0; t < kThreads; t++) {
        EXPECT_EQ(popped[t], pushed[t]) << "thread " << t;  // none lost, none twice, in order
        total_pushed += pushed[t].size();
    }
    EXPECT_EQ(total_pushed + r.h->dropped_records, uint64_t(kThreads) * per);
    EXPECT_FALSE(pph_ring_stalled(r.h));
    if (expect_no_drops)
        EXPECT_EQ(r.h->dropped_records, 0u);
    else
        EXPECT_GT(r.h->dropped_records, 0u);
}

TEST(HeapAgentRing, FourProducersExactWhenTheConsumerKeepsUp) {
    ring_run(1 << 18, 50000, 0, true);  // room for every record: nothing may be dropped
}

TEST(HeapAgentRing, FourProducersDropsCountedWhenTheConsumerLags) {
    ring_run(64, 20000, 20, false);
}

// ---- the channel's bounds ----

TEST(HeapAgentChannel, CreatesAndLaysOut) {
    AgentChannel ch({.mode = PPH_SAMPLED, .rate = 4096, .target_pid = 1234, .ring_slots = 1000});
    const pph_header* h = ch.header();
    EXPECT_EQ(h->magic, PPH_MAGIC);
    EXPECT_EQ(h->ring_slots, 1024u);
    EXPECT_EQ(h->map_size, ch.size());
    EXPECT_EQ(h->target_pid, 1234);
    EXPECT_TRUE(fs::exists(ch.path()));
    EXPECT_EQ(fs::status(ch.path()).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
    const auto* gaps = reinterpret_cast<const uint64_t*>(reinterpret_cast<const char*>(h) + h->gaps_off);
    EXPECT_EQ(gaps[0], sample_gap_quantiles(4096, PPH_GAPS)[0]);
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_NONE));
    EXPECT_EQ(ch.wait_attached(5), uint32_t(PPH_STATE_NONE));
    const std::string path = ch.path();
    ch.unlink_path();
    EXPECT_FALSE(fs::exists(path));
}

TEST(HeapAgentChannel, StackBoundsOnGarbage) {
    AgentChannel ch({.stack_slots = 16, .pool_words = 64, .max_frames = 8});
    pph_header* h = ch.header();
    auto* stacks = reinterpret_cast<pph_stack*>(reinterpret_cast<char*>(h) + h->stacks_off);
    auto* pool = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(h) + h->pool_off);
    pool[10] = 0x1234;
    pool[11] = 0x5678;
    stacks[0] = {1, 10, 2, 1};  // good
    stacks[1] = {2, 10, 2, 0};  // not ready
    stacks[2] = {3, 63, 2, 1};  // runs past the pool
    stacks[3] = {4, 0, 9, 1};   // more frames than max_frames
    stacks[4] = {5, 0xffffffffu, 0xffff, 1};
    auto s = ch.stack(1);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0], 0x1234u);
    EXPECT_EQ(s[1], 0x5678u);
    for (uint32_t id : {0u, 2u, 3u, 4u, 5u, 17u, 0xffffffffu}) EXPECT_TRUE(ch.stack(id).empty()) << id;
    // The target rewrote the layout: perf-prof keeps its own.
    h->stack_slots = 1u << 30;
    h->pool_words = 1u << 30;
    h->max_frames = 1000;
    EXPECT_TRUE(ch.stack(3).empty());
    EXPECT_TRUE(ch.stack(1000).empty());
    // An agent's error line without its NUL is cut at the field.
    std::memset(h->error, 'x', sizeof h->error);
    EXPECT_EQ(ch.error().size(), sizeof h->error);
}

TEST(HeapAgentChannel, DrainIgnoresAScribbledHeader) {
    AgentChannel ch({.ring_slots = 8});
    pph_header* h = ch.header();
    auto* ring = reinterpret_cast<pph_rec*>(reinterpret_cast<char*>(h) + h->ring_off);
    for (int i = 0; i < 5; i++) pph_ring_push(h, ring, 100 + i, 1, 0, PPH_REC_ALLOC, PPH_FN_MALLOC);
    h->ring_slots = 1ull << 40;
    h->tail = 12345678;
    std::vector<uint64_t> got;
    EXPECT_EQ(ch.drain([&](const pph_rec& r) { got.push_back(r.ptr); }), 5u);
    EXPECT_EQ(got, (std::vector<uint64_t>{100, 101, 102, 103, 104}));
}

TEST(HeapAgentChannel, WrappedMappingChecksItsLayout) {
    std::vector<uint64_t> mem(8192 / 8, 0);
    auto* h = reinterpret_cast<pph_header*>(mem.data());
    h->ring_off = 4096;
    h->ring_slots = 1 << 20;  // past the mapping
    h->stacks_off = 4096;
    h->stack_slots = 4;
    h->pool_off = 4096;
    EXPECT_THROW(AgentChannel(mem.data(), 8192), perfprof::Error);
    h->ring_slots = 3;  // not a power of two
    EXPECT_THROW(AgentChannel(mem.data(), 8192), perfprof::Error);
    h->ring_slots = 4;
    EXPECT_NO_THROW(AgentChannel(mem.data(), 8192));
    EXPECT_THROW(AgentChannel(mem.data(), 100), perfprof::Error);
}

}  // namespace

// ---- workloads under the agent ----

namespace {

std::string workload(const std::string& name) {
    return (fs::path(perfprof::test::self_exe()).parent_path() / "workloads" / name).string();
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
    std::vector<pph_rec> recs;
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
        const uint64_t lo = std::stoull(line, nullptr, 16), hi = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
        return sp >= lo && sp < hi;
    }
    return false;
}

// Runs argv with the agent preloaded on channel `ch`, draining it until the process ended.
// Without `live`, the ring is read only once the process ended, and the heartbeat not renewed.
// Without `preload`, the process loads the agent itself (heap_inject).
AgentRun run_under_agent(AgentChannel& ch, const std::vector<std::string>& argv, bool live = true,
                         bool preload = true) {
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
    if (::write(release[1], "x", 1) != 1) return r;
    ::close(release[1]);
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    auto collect = [&] {
        if (!live && r.status == -1) return;
        ch.drain([&](const pph_rec& rec) { r.recs.push_back(rec); });
        char buf[4096];
        ssize_t n;
        while ((n = ::read(out[0], buf, sizeof buf)) > 0) r.out.append(buf, size_t(n));
    };
    for (int i = 0; i < 30000; i++) {  // 30 s at most
        collect();
        pph_header* h = ch.header();
        if (__atomic_load_n(&h->exit_state, __ATOMIC_ACQUIRE) == PPH_EXIT_WAITING && !r.exit_waited) {
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
    AgentRun r = run_under_agent(ch, {exe, std::to_string(kSmall), std::to_string(kBig), std::to_string(kRounds)});
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status << " " << ch.error();
    EXPECT_EQ(r.out, "leaks done\n");
    const pph_header* h = ch.header();
    EXPECT_EQ(h->state, uint32_t(PPH_STATE_RECORDING)) << ch.error();
    EXPECT_EQ(h->agent_pid, h->target_pid);
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
    AgentRun r = run_under_agent(ch, {workload("leaks"), std::to_string(kSmall), std::to_string(kBig), std::to_string(kRounds)});
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

TEST(HeapAgentRun, InjectModePatchesAndRestoresTheSlots) {
    ASSERT_FALSE(agent_path().empty());
    AgentChannel ch({});
    const int n = 4;
    AgentRun r = run_under_agent(ch, {workload("heap_inject"), agent_path(), ch.path(), std::to_string(n)}, true, false);
    ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status << " " << ch.error();
    EXPECT_EQ(r.out, "heap_inject done\n");
    EXPECT_EQ(ch.state(), uint32_t(PPH_STATE_OFF));
    Outstanding o(r.recs);
    auto sizes = o.sizes();
    EXPECT_EQ(sizes[56], uint64_t(n));  // the program's own calls
    EXPECT_EQ(sizes[88], uint64_t(n));  // from the library dlopen'd after the attach
    EXPECT_EQ(sizes[21], 1u);           // strdup: libc calls malloc through its own GOT
    EXPECT_EQ(sizes[7], 1u);
    EXPECT_EQ(sizes.count(32), 0u);   // before the attach
    EXPECT_EQ(sizes.count(120), 0u);  // after the detach
    EXPECT_EQ(sizes.count(16), 0u);
    for (auto& [p, rec] : o.live)
        EXPECT_TRUE((rec.size != 56 && rec.size != 88) || !ch.stack(rec.stack).empty()) << rec.size;
}

}  // namespace
