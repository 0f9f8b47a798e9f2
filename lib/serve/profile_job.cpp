#include "serve/profile_job.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/text.h"
#include "core/time.h"
#include "output/gperf_cpu.h"
#include "perf-prof/error.h"
#include "perf-prof/profiler.h"
#include "perf/proc_tasks.h"
#include "perf/session.h"
#include "serve/process_info.h"
#include "serve/wait_samplers.h"
#include "stack/pprof_stacks.h"
#include "stack/stack_printer.h"
#include "unwind/call_graph.h"

namespace perfprof::serve {

namespace {

constexpr int kDataFd = 3;  // the child's profile goes here; its stdout and stderr are messages

// The child's profiler: every sample's chain counted; the profile written at the end.
class CpuSampler final : public Profiler {
public:
    CpuSampler(Context& ctx, const ProfileRequest& r)
        : ctx_(ctx), r_(r), printer_(ctx.symbolizer(), true, true) {
        if (r.format == CpuFormat::Gperftools) maps_ = core::read_file_or_empty(maps_path());
        if (r.format == CpuFormat::Proto) {
            pprof_ = std::make_unique<stack::PprofStacks>(
                printer_, stack::PprofStacks::Kind{"samples", "count", int64_t(1'000'000'000 / r.freq)});
            const ProcessInfo p = describe_process(r.pid);
            pprof_->label("executable", p.exe);
            if (!p.build_id.empty()) pprof_->label("build_id", p.build_id);
        }
    }

    EventPlan plan() override {
        EventSpec ev;
        ev.sys = "serve";
        ev.name = "cpu-clock";
        ev.kind = EventKind::Other;
        perf_event_attr& a = ev.attr;
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_CPU_CLOCK;
        // A fixed period rather than a frequency: each sample is exactly 1/F s of CPU time.
        a.sample_period = 1'000'000'000 / r_.freq;
        a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        unwind::request_stacks(a, true, true, r_.dwarf_stack);
        EventPlan p;
        p.events.push_back(std::move(ev));
        p.inherit = true;  // the threads the target creates while it is profiled
        p.pages = r_.dwarf_stack ? 256 : 32;
        p.per_event_wakeup = false;
        return p;
    }

    void sample(const Sample& s) noexcept override {
        if (!s.callchain || !s.callchain_nr) return;
        if (pprof_) {
            pprof_->add_callchain(s.callchain, s.callchain_nr, s.pid, ctx_.comm(s.pid));
            return;
        }
        // The chain without the context markers: kernel frames (innermost first), then user.
        key_.clear();
        for (uint64_t i = 0; i < s.callchain_nr; ++i)
            if (s.callchain[i] < PERF_CONTEXT_MAX)
                key_.append(reinterpret_cast<const char*>(&s.callchain[i]), 8);
        if (!key_.empty()) counts_[key_]++;
    }

    void finish() override {
        std::string out;
        if (pprof_) {
            if (!perf::task_alive(r_.pid))
                pprof_->builder().comment("process " + std::to_string(r_.pid) + " exited during the profile");
            out = pprof_->gzipped();
        } else {
            // The maps now, while the target may still live; those of the start when it is gone.
            std::string maps = core::read_file_or_empty(maps_path());
            if (maps.empty()) maps = std::move(maps_);
            output::GperfCpuProfile prof(1'000'000 / r_.freq);
            std::vector<uint64_t> pcs;
            for (const auto& [key, n] : counts_) {
                pcs.resize(key.size() / 8);
                std::memcpy(pcs.data(), key.data(), key.size());
                prof.add(pcs, n);
            }
            out = prof.encode(maps);
        }
        core::write_all(kDataFd, out);
    }

private:
    std::string maps_path() const { return "/proc/" + std::to_string(r_.pid) + "/maps"; }

    Context& ctx_;
    ProfileRequest r_;
    stack::Printer printer_;
    std::unique_ptr<stack::PprofStacks> pprof_;
    std::unordered_map<std::string, uint64_t> counts_;  // chain (its words) → samples
    std::string key_, maps_;  // maps_: the target's at the start (gperftools format)
};

// The child's profiler for the request's kind; its profile goes to kDataFd.
std::unique_ptr<Profiler> sampler(Context& ctx, const ProfileRequest& r) {
    auto write = [](const std::string& profile) { core::write_all(kDataFd, profile); };
    switch (r.kind) {
        case ProfileKind::Block:
            return block_sampler(ctx, r.pid, write);
        case ProfileKind::Mutex:
            return mutex_sampler(ctx, r.pid, write);
        case ProfileKind::Cpu:
            break;
    }
    return std::make_unique<CpuSampler>(ctx, r);
}

// In the child: fds 0 /dev/null, 1 and 2 the messages, 3 the profile, nothing else of
// serve's (its listening socket and connections must close when serve closes them).
[[noreturn]] void child_main(const ProfileRequest& r, int data, int messages) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // dup2 clears it on fd 0
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(messages, 1) < 0 || ::dup2(messages, 2) < 0 ||
        ::dup2(data, kDataFd) < 0)
        ::_exit(120);
    ::close_range(kDataFd + 1, ~0U, 0);
    // serve's stop signals stay blocked: a SIGINT from stop() that comes before the session
    // reads them from its signalfd waits for it instead of killing the child unheard.
    sigset_t stops;
    sigemptyset(&stops);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, s);
    for (int s : {SIGPIPE, SIGCHLD}) std::signal(s, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &stops, nullptr);
    int rc = 1;
    try {
        Options opt;
        opt.profiler = "serve";
        opt.pids = std::to_string(r.pid);
        opt.call_graph = true;
        opt.dwarf_stack = r.dwarf_stack;
        perf::Session session(perf::DeviceSpec{"serve", [&r](Context& ctx) { return sampler(ctx, r); }, opt});
        rc = session.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(rc);
}

}  // namespace

ProfileJob::ProfileJob(const ProfileRequest& r) : r_(r) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw Error::sys(errno, "serve: pipe");
    core::Fd read_end(p[0]), write_end(p[1]);
    messages_.reset(::memfd_create("perf-prof-serve-job", MFD_CLOEXEC));
    if (!messages_) throw Error::sys(errno, "serve: memfd_create");
    std::fflush(nullptr);
    start_ns_ = core::monotonic_now_ns();
    deadline_ns_ = start_ns_ + int64_t(r.seconds) * 1'000'000'000;
    child_ = ::fork();
    if (child_ < 0) throw Error::sys(errno, "serve: fork");
    if (child_ == 0) child_main(r, write_end.get(), messages_.get());
    data_ = std::move(read_end);
    ::fcntl(data_.get(), F_SETFL, O_NONBLOCK);
}

ProfileJob::~ProfileJob() {
    if (child_ > 0) {
        ::kill(child_, SIGKILL);
        while (::waitpid(child_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

void ProfileJob::stop() {
    if (stopped_ || child_ <= 0) return;
    stopped_ = true;
    ::kill(child_, SIGINT);
}

bool ProfileJob::pump() {
    char buf[1 << 16];
    while (!eof_) {
        const ssize_t n = ::read(data_.get(), buf, sizeof buf);
        if (n > 0) {
            body_.append(buf, size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;  // EAGAIN: more later
        eof_ = true;
    }
    if (child_ > 0) {
        while (::waitpid(child_, &status_, 0) < 0 && errno == EINTR) {
        }
        child_ = -1;
        end_ns_ = core::monotonic_now_ns();
    }
    return true;
}

ProfileJob::Result ProfileJob::result() {
    Result res;
    res.ok = WIFEXITED(status_) && WEXITSTATUS(status_) == 0 && !body_.empty();
    res.body = std::move(body_);
    if (!stopped_) {
        const double s = double(end_ns_ - start_ns_) / 1e9;
        char buf[160];
        std::snprintf(buf, sizeof buf, "process %d exited after %.1f s of the %llu s asked", r_.pid, s,
                      static_cast<unsigned long long>(r_.seconds));
        res.note = buf;
    }
    if (!res.ok) {
        // What the child said: its last line is the reason (an Error's message).
        ::lseek(messages_.get(), 0, SEEK_SET);  // the child's writes moved the shared offset
        std::string said = core::read_fd(messages_.get());
        while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
        if (const size_t nl = said.rfind('\n'); nl != std::string::npos) said.erase(0, nl + 1);
        if (said.rfind("perf-prof: ", 0) == 0) said.erase(0, 11);
        if (!said.empty()) res.note = said;
        if (res.note.empty()) res.note = "the profiler ended with status " + std::to_string(status_);
    }
    return res;
}

}  // namespace perfprof::serve
