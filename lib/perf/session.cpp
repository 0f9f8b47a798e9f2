#include "perf/session.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>

#include "filter/syscall_names.h"
#include "perf-prof/error.h"
#include "perf/dispatcher.h"
#include "perf/opener.h"

namespace perfprof::perf {

namespace {

constexpr uint64_t kCommKeepNs = 10'000'000'000ull;  // exited tasks stay resolvable this long
constexpr unsigned kResyncTicks = 60;                // clock resynchronisation, in seconds
// Batched wake-ups leave up to a watermark of records in a ring; this timer bounds how long
// they wait there, so output stays prompt on a quiet machine.
constexpr uint64_t kFlushMs = 100;

int64_t tv_ns(const timeval& tv) {
    return int64_t(tv.tv_sec) * 1000000000 + int64_t(tv.tv_usec) * 1000;
}

}  // namespace

Session::Session(DeviceSpec top, NestedResolver nested)
    : opt_(top.opt),
      top_(std::move(top)),
      nested_(std::move(nested)),
      symbols_(sym::Symbolizer::Settings{.verbose = opt_.verbose}) {
    hooks_.user = this;
    hooks_.comm_get = [](int pid, void* user) -> const char* {
        auto* s = static_cast<Session*>(user);
        // Several results may be alive in one expression (comm_get(a) == comm_get(b)).
        std::string& buf = s->hook_bufs_[s->hook_next_++ % s->hook_bufs_.size()];
        buf = s->comm(uint32_t(pid));
        return buf.c_str();
    };
    hooks_.syscall_name = [](int64_t id, void*) { return filter::syscall_name(id); };
    // The symbolizer's kernel table, loaded on the first call (profilers whose programs call
    // ksymbol() load it in plan(): Program::uses_ksymbol()).
    hooks_.ksymbol = [](uint64_t addr, void* user) -> const char* {
        return static_cast<Session*>(user)->symbols_.kernel()->find(addr);
    };
}

Session::Session(const Options& opt, const ProfilerInfo& info, NestedResolver nested)
    : Session(DeviceSpec{info.name, info.create, opt}, std::move(nested)) {}

Session::~Session() = default;

tep::Tep& Session::tep() {
    if (!tep_) tep_ = std::make_unique<tep::Tep>();
    return *tep_;
}

std::string_view Session::comm(uint32_t tid) {
    if (comms_)
        if (auto name = comms_->find(tid)) return *name;
    return "<...>";
}

int64_t Session::realtime(uint64_t time) const {
    return clock_->realtime(time);
}

uint64_t Session::now() const {
    if (!clock_ || !clock_->calibrated()) return 0;
    const uint64_t raw = clock_->raw_from_monotonic(core::monotonic_now_ns());
    return raw ? clock_->convert(raw) : 0;
}

const std::vector<int>& Session::threads() const {
    static const std::vector<int> none;
    return opener_ ? opener_->tids() : none;
}

int Session::cpu_count() const {
    return opener_ ? opener_->cpu_count() : 0;
}

bool Session::set_exec_env(int pid, const std::string& name, const std::string& value) {
    return workload_ && workload_->pid() == pid && workload_->set_exec_env(name, value);
}

int Session::run() {
    // The workload is forked first, so it keeps the original stdout/stderr (SPEC §1.6, §10 #22)
    // and inherits none of our event fds.
    const bool by_threads = !opt_.pids.empty() || !opt_.tids.empty();
    if (!by_threads && !opt_.workload.empty()) workload_ = std::make_unique<Workload>(opt_.workload);
    // Fully buffered and flushed after every batch of records: the output appears as promptly
    // as with line buffering, at one write per batch instead of one per line. setvbuf is only
    // valid before the first output, so it is set here once.
    static char buf[1 << 16];
    std::setvbuf(stdout, buf, _IOFBF, sizeof(buf));
    redirect_output();
    setup_signals();
    raise_fd_limit();

    comms_ = std::make_unique<CommTable>();
    Dispatcher::side_band_to_symbols(*comms_, symbols_);
    clock_ = std::make_unique<EventClock>(opt_, tep());

    opener_ = std::make_unique<Opener>(opt_, *this, *clock_, std::move(nested_));
    opener_->attach(workload_.get());
    opener_->open(std::move(top_));
    // Seized before anything runs: the workload still waits to exec.
    opener_->start_following();
    dispatcher_ = std::make_unique<Dispatcher>(opt_, opener_->devices(), opener_->rings(), *comms_, *clock_,
                                               &hooks_, loop_, symbols_);
    dispatcher_->start();
    watch();

    enable();
    if (workload_) workload_->release();
    loop_.run({[] {
                   std::fflush(stdout);
                   return -1;
               },
               {}});
    finish();
    return 0;
}

void Session::redirect_output() {
    if (!opt_.output.empty()) {
        core::Fd fd(::open(opt_.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
        if (!fd) throw Error::sys(errno, "cannot open output file '" + opt_.output + "'");
        std::fflush(stdout);
        if (::dup2(fd.get(), STDOUT_FILENO) < 0 || ::dup2(fd.get(), STDERR_FILENO) < 0)
            throw Error::sys(errno, "cannot redirect output to '" + opt_.output + "'");
    }
}

void Session::setup_signals() {
    loop_.watch_signals({SIGINT, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGHUP},
                        [this](const signalfd_siginfo& si) { on_signal(si); });
    // A closed stdout pipe (perf-prof ... | head) must end the run, not kill it mid-write.
    std::signal(SIGPIPE, SIG_IGN);
}

// Every event is an fd per CPU (and per followed task): use what the hard limit allows,
// as perf does. The workload, forked already, keeps the limit it was given.
void Session::raise_fd_limit() {
    rlimit rl;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
}

// The rings, the side band, the timers and stdin in the loop.
void Session::watch() {
    Rings& rings = opener_->rings();
    // Kept by the opener for the rings of tasks followed later.
    auto watch_ring = [this](size_t idx) {
        loop_.add(
            opener_->rings()[idx].ring->fd(),
            [this, idx](uint32_t events) { dispatcher_->on_ring(idx, events); }, EPOLLIN | EPOLLHUP);
    };
    bool batched = false;
    for (size_t i = 0; i < rings.size(); i++) {
        const Device& d = *rings[i].dev;
        // Overwrite rings are not watched: they are read at ticks and at exit (SPEC §4.3).
        if (d.plan.overwrite) continue;
        watch_ring(i);
        batched |= d.opt.watermark ? *d.opt.watermark != 0 : !d.plan.per_event_wakeup;
    }
    opener_->on_new_ring = watch_ring;
    for (int fd : comms_->fds()) loop_.add(fd, [this](uint32_t) { comms_->drain(); });
    // -i, else the top profiler's default period (EventPlan::interval_ms).
    interval_ms_ = opt_.interval_ms ? opt_.interval_ms : opener_->devices()[0]->plan.interval_ms;
    if (interval_ms_) loop_.add_timer(interval_ms_, [this] { dispatcher_->tick(); });
    for (auto& d : opener_->devices())
        if (d->plan.tick_ms)
            loop_.add_timer(d->plan.tick_ms, [dev = d.get()] {
                if (!dev->closed) dev->profiler->tick();
            });
    if (opt_.usage_self_ms) {
        loop_.add_timer(opt_.usage_self_ms, [this] { usage_self(); });
        usage_wall_ = core::monotonic_now_ns();
    }
    loop_.add_timer(1000, [this] { housekeeping(); });
    if (batched) loop_.add_timer(kFlushMs, [this] { dispatcher_->drain_all(); });
    // Lines on a non-terminal stdin are markers (SPEC §1.11). Regular files and /dev/null
    // cannot be polled; epoll_ctl refuses them and we simply do not watch.
    if (!::isatty(STDIN_FILENO)) loop_.try_add(STDIN_FILENO, [this](uint32_t) { on_stdin(); });
}

void Session::enable() {
    int64_t t0 = core::monotonic_now_ns();
    opener_->enable_planned();
    int64_t t1 = core::monotonic_now_ns();
    // Atomic enable (SPEC §3.11): the kernel enables one CPU after another, so with several
    // instances a sample from before the last one was enabled is dropped, so that no state
    // starts on one CPU while another was still blind. The cut-off is the end of the enable
    // call, expressed in perf time through the clock calibration.
    if (opener_->rings().size() > 1 && !dispatcher_->overwrite() && clock_->calibrated())
        dispatcher_->set_cutoff(clock_->raw_from_monotonic(t1));
    if (opt_.verbose > 0) {
        int64_t d = (t1 - t0 + 500) / 1000;
        std::printf("%s: enabled after %lld.%06lld\n", opener_->devices()[0]->name.c_str(),
                    (long long)(d / 1000000), (long long)(d % 1000000));
        std::fflush(stdout);
    }
}

void Session::on_signal(const signalfd_siginfo& si) {
    switch (si.ssi_signo) {
        case SIGINT:
        case SIGTERM:
        case SIGHUP:
            loop_.stop();
            break;
        case SIGCHLD:
            reap();
            break;
        case SIGUSR1:
            // Log rotation: re-open the -o file; the profilers' own statistics (SPEC §4.4.7).
            if (!opt_.output.empty()) redirect_output();
            for (auto& d : opener_->devices())
                if (!d->closed) d->profiler->sigusr1();
            std::fflush(stdout);
            break;
        case SIGUSR2:
            usage_self();
            dispatcher_->dump_state();
            break;
    }
}

void Session::on_stdin() {
    char buf[4096];
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n <= 0) {
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
        // EOF or error: stop watching, or a closed stdin would wake us forever (SPEC §10 #18).
        loop_.remove(STDIN_FILENO);
        return;
    }
    stdin_buf_.append(buf, size_t(n));
    size_t nl;
    while ((nl = stdin_buf_.find('\n')) != std::string::npos) {
        dispatcher_->tick();
        std::printf("%s %s\n", core::format_wall(core::realtime_now_ns()).c_str(),
                    stdin_buf_.substr(0, nl).c_str());
        stdin_buf_.erase(0, nl + 1);
    }
}

void Session::housekeeping() {
    if (!interval_ms_) dispatcher_->report_lost_all();  // at most once a second (SPEC §3.3)
    comms_->gc(kCommKeepNs);
    if (++house_ticks_ % kResyncTicks == 0) clock_->sync();
    reap();
    if (opener_->attached_tasks_gone()) loop_.stop();
}

void Session::reap() {
    if (opener_->reap()) loop_.stop();
}

void Session::usage_self() {
    rusage ru;
    ::getrusage(RUSAGE_SELF, &ru);
    int64_t now = core::monotonic_now_ns();
    int64_t u = tv_ns(ru.ru_utime), s = tv_ns(ru.ru_stime);
    double span = double(std::max<int64_t>(now - usage_wall_, 1));
    std::printf("%s CPU %%usr %.2f %%sys %.2f MAXRSS %ldk\n",
                core::format_wall(core::realtime_now_ns()).c_str(), 100.0 * double(u - usage_utime_) / span,
                100.0 * double(s - usage_stime_) / span, ru.ru_maxrss);
    usage_wall_ = now;
    usage_utime_ = u;
    usage_stime_ = s;
}

void Session::finish() {
    opener_->events().disable();
    dispatcher_->finish();
    opener_->release_tasks();  // every followed task let go, with the signal it was about to get
    workload_.reset();         // SIGTERM to a workload still running
}

}  // namespace perfprof::perf
