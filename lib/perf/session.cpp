#include "perf/session.h"
#include "perf/session_device.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "cli/parser.h"
#include "core/parse.h"
#include "filter/syscall_names.h"
#include "perf-prof/error.h"
#include "perf/record.h"

namespace perfprof::perf {

namespace {

// epoll tags: the kind in the high 32 bits, an index in the low ones.
enum Tag : uint64_t { kRing = 1, kSideBand, kSignal, kInterval, kUsage, kHouse, kFlush, kStdin };
constexpr uint64_t tag(Tag t, uint32_t idx = 0) {
    return (uint64_t(t) << 32) | idx;
}

constexpr uint64_t kCommKeepNs = 10'000'000'000ull;  // exited tasks stay resolvable this long
constexpr unsigned kResyncTicks = 60;                // clock resynchronisation, in seconds
// Batched wake-ups leave up to a watermark of records in a ring; this timer bounds how long
// they wait there, so output stays prompt on a quiet machine.
constexpr uint64_t kFlushMs = 100;

core::Fd make_timer(uint64_t period_ms) {
    core::Fd fd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!fd) throw Error::sys(errno, "timerfd_create");
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(period_ms / 1000);
    its.it_value.tv_nsec = static_cast<long>((period_ms % 1000) * 1000000);
    its.it_interval = its.it_value;
    if (::timerfd_settime(fd.get(), 0, &its, nullptr) != 0) throw Error::sys(errno, "timerfd_settime");
    return fd;
}

void consume_timer(int fd) {
    uint64_t n;
    while (::read(fd, &n, sizeof(n)) < 0 && errno == EINTR) {
    }
}

}  // namespace

Session::Session(const Options& opt, const ProfilerInfo& info)
    : opt_(opt), info_(info), symbols_(sym::Symbolizer::Settings{.verbose = opt.verbose}) {
    hooks_.user = this;
    hooks_.comm_get = [](int pid, void* user) -> const char* {
        auto* s = static_cast<Session*>(user);
        // Several results may be alive in one expression (comm_get(a) == comm_get(b)).
        std::string& buf = s->hook_bufs_[s->hook_next_++ % s->hook_bufs_.size()];
        buf = s->comm(uint32_t(pid));
        return buf.c_str();
    };
    hooks_.syscall_name = [](int64_t id, void*) { return filter::syscall_name(id); };
}

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
    // Every event is an fd per CPU (and per followed task): use what the hard limit allows,
    // as perf does. The workload, forked already, keeps the limit it was given.
    rlimit rl;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }

    comms_ = std::make_unique<CommTable>();
    // Symbols of a process are kept as long as its name: samples read after its exit record
    // still resolve, and a reused pid gets fresh maps.
    comms_->forget = [this](uint32_t tid) { symbols_.exit(tid); };
    comms_->on_exec = [this](uint32_t pid) { symbols_.exec(pid); };
    comms_->on_mmap = [this](const CommTable::Mapping& m) {
        if (!(m.prot & PROT_EXEC)) return;
        sym::MapsLine l;
        l.start = m.start;
        l.end = m.start + m.len;
        l.offset = m.pgoff;
        l.perms = "r-xp";
        l.dev_major = m.maj;
        l.dev_minor = m.min;
        l.inode = m.ino;
        l.path = std::string(m.path);
        symbols_.mmap(m.pid, l);
    };
    clock_ = std::make_unique<EventClock>(opt_, tep());

    attach();
    Device& top = add_device(info_, opt_, nullptr);
    open_device(top);
    // Seized before anything runs: the workload still waits to exec.
    start_following();
    for (auto& d : devices_) overwrite_ |= d->plan.overwrite;
    // One time order for every ring when any device needs it (a nested task-state pairs
    // events of different CPUs even when its parent was not asked for --order).
    const bool order = opt_.order || std::any_of(devices_.begin(), devices_.end(),
                                                 [](const auto& d) { return d->plan.order; });
    if (order) orderer_ = std::make_unique<Orderer>(rings_.size());

    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) throw Error::sys(errno, "epoll_create1");
    bool batched = false;
    for (size_t i = 0; i < rings_.size(); i++) {
        const Device& d = *rings_[i].dev;
        // Overwrite rings are not watched: they are read at ticks and at exit (SPEC §4.3).
        if (d.plan.overwrite) continue;
        watch_ring(i);
        batched |= d.opt.watermark ? *d.opt.watermark != 0 : !d.plan.per_event_wakeup;
    }
    for (int fd : comms_->fds()) add_fd(fd, tag(kSideBand));
    add_fd(signal_fd_.get(), tag(kSignal));
    if (opt_.interval_ms) {
        interval_fd_ = make_timer(opt_.interval_ms);
        add_fd(interval_fd_.get(), tag(kInterval));
    }
    if (opt_.usage_self_ms) {
        usage_fd_ = make_timer(opt_.usage_self_ms);
        add_fd(usage_fd_.get(), tag(kUsage));
        usage_wall_ = core::monotonic_now_ns();
    }
    house_fd_ = make_timer(1000);
    add_fd(house_fd_.get(), tag(kHouse));
    if (batched) {
        flush_fd_ = make_timer(kFlushMs);
        add_fd(flush_fd_.get(), tag(kFlush));
    }
    // Lines on a non-terminal stdin are markers (SPEC §1.11). Regular files and /dev/null
    // cannot be polled; epoll_ctl refuses them and we simply do not watch.
    if (!::isatty(STDIN_FILENO)) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = tag(kStdin);
        stdin_open_ = ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, STDIN_FILENO, &ev) == 0;
    }

    enable();
    if (workload_) workload_->release();
    loop();
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
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGHUP}) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throw Error::sys(errno, "sigprocmask");
    signal_fd_.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!signal_fd_) throw Error::sys(errno, "signalfd");
    // A closed stdout pipe (perf-prof ... | head) must end the run, not kill it mid-write.
    std::signal(SIGPIPE, SIG_IGN);
}

void Session::enable() {
    int64_t t0 = core::monotonic_now_ns();
    events_.enable();
    int64_t t1 = core::monotonic_now_ns();
    // Atomic enable (SPEC §3.11): the kernel enables one CPU after another, so with several
    // instances a sample from before the last one was enabled is dropped, so that no state
    // starts on one CPU while another was still blind. The cut-off is the end of the enable
    // call, expressed in perf time through the clock calibration.
    if (rings_.size() > 1 && !overwrite_ && clock_->calibrated()) cutoff_ = clock_->raw_from_monotonic(t1);
    if (opt_.verbose > 0) {
        int64_t d = (t1 - t0 + 500) / 1000;
        std::printf("%s: enabled after %lld.%06lld\n", info_.name, (long long)(d / 1000000),
                    (long long)(d % 1000000));
        std::fflush(stdout);
    }
}

void Session::watch_ring(size_t idx) {
    add_fd(rings_[idx].ring->fd(), tag(kRing, uint32_t(idx)), EPOLLIN | EPOLLHUP);
}

void Session::add_fd(int fd, uint64_t t, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = t;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) throw Error::sys(errno, "epoll_ctl");
}

void Session::loop() {
    epoll_event evs[64];
    while (!stopping_) {
        std::fflush(stdout);
        int n = ::epoll_wait(epoll_.get(), evs, 64, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error::sys(errno, "epoll_wait");
        }
        for (int i = 0; i < n && !stopping_; i++) {
            const uint64_t t = evs[i].data.u64;
            const uint32_t idx = uint32_t(t);
            switch (Tag(t >> 32)) {
                case kRing:
                    on_ring(idx, evs[i].events);
                    break;
                case kSideBand:
                    comms_->drain();
                    break;
                case kSignal:
                    on_signal();
                    break;
                case kInterval:
                    consume_timer(interval_fd_.get());
                    tick();
                    break;
                case kUsage:
                    consume_timer(usage_fd_.get());
                    usage_self();
                    break;
                case kHouse:
                    consume_timer(house_fd_.get());
                    housekeeping();
                    break;
                case kFlush:
                    consume_timer(flush_fd_.get());
                    drain_all();
                    break;
                case kStdin:
                    on_stdin();
                    break;
            }
        }
    }
}

void Session::on_ring(size_t idx, uint32_t events) {
    Ring& r = rings_[idx];
    // With ordering every ring is read before the merge: a ring left unread could hold
    // records older than what the merge would release (SPEC §3.4 progress rule).
    if (orderer_)
        drain_all();
    else
        drain(r);
    if ((events & EPOLLHUP) && !r.hup) {
        // The task of a per-thread ring exited: nothing more can arrive.
        r.hup = true;
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, r.ring->fd(), nullptr);
        Device* top = devices_[0].get();
        if (std::all_of(rings_.begin(), rings_.end(), [&](const Ring& x) { return x.dev != top || x.hup; }))
            stopping_ = true;
    }
}

void Session::on_signal() {
    signalfd_siginfo si;
    while (::read(signal_fd_.get(), &si, sizeof(si)) == sizeof(si)) {
        switch (si.ssi_signo) {
            case SIGINT:
            case SIGTERM:
            case SIGHUP:
                stopping_ = true;
                break;
            case SIGCHLD:
                reap();
                break;
            case SIGUSR1:
                // Log rotation: re-open the -o file; the profilers' own statistics (SPEC §4.4.7).
                if (!opt_.output.empty()) redirect_output();
                for (auto& d : devices_)
                    if (!d->closed) d->profiler->sigusr1();
                std::fflush(stdout);
                break;
            case SIGUSR2:
                dump_state();
                break;
        }
    }
}

void Session::on_stdin() {
    char buf[4096];
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n <= 0) {
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
        // EOF or error: stop watching, or a closed stdin would wake us forever (SPEC §10 #18).
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, STDIN_FILENO, nullptr);
        stdin_open_ = false;
        return;
    }
    stdin_buf_.append(buf, size_t(n));
    size_t nl;
    while ((nl = stdin_buf_.find('\n')) != std::string::npos) {
        tick();
        std::printf("%s %s\n", core::format_wall(core::realtime_now_ns()).c_str(),
                    stdin_buf_.substr(0, nl).c_str());
        stdin_buf_.erase(0, nl + 1);
    }
}

void Session::drain(Ring& r) {
    // Task names first: a comm or exec record written before these samples is in the side
    // band by now, and a name must be current when its sample is printed.
    comms_->drain();
    if (r.dev->plan.overwrite) return;
    r.ring->reader().drain([&](const perf_event_header& h) { read_record(r, h); });
}

void Session::drain_all() {
    comms_->drain();
    for (Ring& r : rings_)
        if (!r.dev->plan.overwrite)
            r.ring->reader().drain([&](const perf_event_header& h) { read_record(r, h); });
    if (orderer_) flush_ordered(false);
}

void Session::read_overwrite() {
    if (!overwrite_) return;
    comms_->drain();
    for (Ring& r : rings_) {
        if (!r.dev->plan.overwrite) continue;
        // Paused while read, so the kernel does not overwrite what we are reading.
        r.ring->drain_backward([&](const perf_event_header& h) { read_record(r, h); });
    }
    if (orderer_) flush_ordered(false);
}

uint64_t Session::record_time(const Device& d, const perf_event_header& h) const {
    if (h.type == PERF_RECORD_SAMPLE) {
        if (!(d.sample_type & PERF_SAMPLE_TIME) || h.size < sizeof(h) + d.time_off + 8) return 0;
        uint64_t t;
        std::memcpy(&t, reinterpret_cast<const uint8_t*>(&h) + sizeof(h) + d.time_off, 8);
        return t;
    }
    SampleId id;
    return decode_sample_id(h, d.sample_type, id) ? id.time : 0;
}

// Every record read from a ring passes here: lost records are accounted at once; samples
// go to the Orderer or straight to delivery.
void Session::read_record(Ring& r, const perf_event_header& h) {
    Device& d = *r.dev;
    if (h.type == PERF_RECORD_SAMPLE) {
        const uint64_t t = record_time(d, h);
        if (t) r.last_time = t;
        if (orderer_)
            orderer_->push(size_t(&r - rings_.data()), t, h);
        else
            deliver(r, h, t);
    } else if (h.type == PERF_RECORD_LOST) {
        // u64 id; u64 lost; then the sample_id trailer.
        if (h.size < sizeof(h) + 16) return;
        uint64_t lost;
        std::memcpy(&lost, reinterpret_cast<const uint8_t*>(&h) + sizeof(h) + 8, 8);
        LostRange l;
        l.instance = r.instance;
        l.cpu = r.cpu;
        l.tid = r.tid;
        l.count = lost;
        l.start = r.last_time;
        l.end = record_time(d, h);
        r.lost += lost;
        d.lost_total += lost;
        d.lost_pending += lost;
        if (d.opt.verbose > 0 && !d.opt.exit_n) {
            std::fprintf(stderr, "%s %s: lost %llu events on %s #%d\n",
                         core::format_wall(core::realtime_now_ns()).c_str(), d.info.name,
                         (unsigned long long)lost, r.cpu >= 0 ? "CPU" : "thread", r.cpu >= 0 ? r.cpu : r.tid);
            d.lost_pending = 0;
        }
        if (orderer_) {
            // The window's end is the first sample after the loss; the Orderer fills it in.
            l.end = 0;
            orderer_->push_lost(size_t(&r - rings_.data()), l);
        } else {
            deliver_lost(r, l);
        }
    }
}

void Session::deliver_lost(Ring& r, const LostRange& l) {
    if (r.dev->closed) return;
    LostRange c = l;
    if (c.start) c.start = clock_->convert(c.start);
    if (c.end) c.end = clock_->convert(c.end);
    r.dev->profiler->lost(c);
}

void Session::flush_ordered(bool all) {
    auto fn = [&](const Ordered& o) {
        Ring& r = rings_[o.ring];
        if (o.record)
            deliver(r, *o.record, o.time);
        else
            deliver_lost(r, *o.lost);
    };
    if (all)
        orderer_->flush_all(fn);
    else
        orderer_->flush(fn);
}

void Session::deliver(Ring& r, const perf_event_header& h, uint64_t time) {
    Device& d = *r.dev;
    if (d.closed || stopping_) return;
    if (time < cutoff_) return;
    int e = d.need_ids ? d.event_of(sample_identifier(h)) : 0;
    if (e < 0) return;
    const EventSpec& spec = d.plan.events[size_t(e)];
    Sample s;
    if (!decode_sample(h, spec.attr.sample_type, s, spec.attr.sample_regs_user)) return;
    // --call-graph dwarf: the user stack is unwound now, while the process and its mappings
    // are alive; profilers see a complete call chain.
    if (unwind::carries_user_stack(spec.attr)) unwinder_.unwind(s, spec.attr, symbols_);
    // A per-CPU ring says the CPU: profilers may leave PERF_SAMPLE_CPU out (8 bytes less per event).
    if (!(spec.attr.sample_type & PERF_SAMPLE_CPU) && r.cpu >= 0) s.cpu = uint32_t(r.cpu);
    s.time = clock_->convert(time);  // raised when the Orderer fixed it
    s.event = &spec;
    s.event_index = e;
    s.instance = r.instance;
    if (d.perfeval) d.perfeval->count(s);
    if (const filter::Program* f = d.user_filters[size_t(e)].get()) {
        if (f->eval(filter::sample_context(s, &hooks_)) <= 0)
            return;  // dropped: does not count for -N (SPEC §2.6.2)
    }
    if (d.parent) {
        // Forwarded to the parent, which asks us to print it (SPEC §2.8).
        s.from = d.profiler.get();
        Device& p = *d.parent;
        if (!p.closed) {
            p.profiler->sample(s);
            if (++p.samples >= p.opt.exit_n && p.opt.exit_n) close_device(p);
        }
        // -N of a child closes the child only; the parent keeps running.
        if (++d.samples >= d.opt.exit_n && d.opt.exit_n) close_device(d);
        return;
    }
    d.profiler->sample(s);
    // Counted always: the SIGUSR2 dump shows it.
    if (++d.samples >= d.opt.exit_n && d.opt.exit_n) close_device(d);
}

void Session::tick() {
    drain_all();
    read_overwrite();
    for (auto& d : devices_) {
        report_lost(*d);
        // Children print no periodic statistics of their own (SPEC §2.8 rule 7).
        if (!d->parent) d->profiler->interval();
        if (d->perfeval && !d->closed && d->perfeval->report(stdout, d->info.name, opt_.interval_ms))
            close_device(*d);
    }
}

void Session::housekeeping() {
    if (!opt_.interval_ms)
        for (auto& d : devices_) report_lost(*d);  // at most once a second (SPEC §3.3)
    comms_->gc(kCommKeepNs);
    if (++house_ticks_ % kResyncTicks == 0) clock_->sync();
    reap();
    if (attached_tasks_gone()) stopping_ = true;
}

void Session::finish() {
    events_.disable();
    // Everything still in the rings is delivered, unless -N already ended the run.
    const bool keep = stopping_;
    stopping_ = false;
    if (!devices_[0]->closed) {
        drain_all();
        read_overwrite();
        if (orderer_) flush_ordered(true);
    }
    stopping_ = keep;
    for (auto it = devices_.rbegin(); it != devices_.rend(); ++it) (*it)->profiler->finish();
    if (opt_.verbose > 0 && unwinder_.samples()) {
        const unwind::UnwindStats& u = unwinder_.stats();
        std::printf("unwound %llu user stacks: %llu frames, %llu steps through CFI, %llu through frame "
                    "pointers, %llu truncated, %llu broken\n",
                    (unsigned long long)unwinder_.samples(), (unsigned long long)u.frames,
                    (unsigned long long)u.cfi_frames, (unsigned long long)u.fp_frames,
                    (unsigned long long)u.truncated, (unsigned long long)u.broken);
    }
    std::fflush(stdout);
    for (auto& d : devices_) report_lost(*d);
    follower_.reset();  // every followed task let go, with the signal it was about to get
    workload_.reset();  // SIGTERM to a workload still running
}

void Session::reap() {
    if (follower_)
        follower_->poll([this](int tid) { follow(tid); }, [this](int tid) { task_exited(tid); });
    else if (workload_ && workload_->reap())
        stopping_ = true;
}

}  // namespace perfprof::perf
