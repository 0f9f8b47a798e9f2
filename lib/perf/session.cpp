#include "perf/session.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "core/parse.h"
#include "perf-prof/error.h"
#include "perf/record.h"

namespace perfprof::perf {

namespace {

// epoll tags: the kind in the high 32 bits, an index in the low ones.
enum Tag : uint64_t { kRing = 1, kSideBand, kSignal, kInterval, kUsage, kHouse, kStdin };
constexpr uint64_t tag(Tag t, uint32_t idx = 0) {
    return (uint64_t(t) << 32) | idx;
}

constexpr uint64_t kCommKeepNs = 10'000'000'000ull;  // exited tasks stay resolvable this long
constexpr unsigned kResyncTicks = 60;                // clock resynchronisation, in seconds

std::vector<int> threads_of(int pid) {
    std::vector<int> tids;
    std::error_code ec;
    std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
    if (ec)
        throw Error("cannot open /proc/" + std::to_string(pid) + "/task: process " + std::to_string(pid) +
                    " does not exist or has exited");
    for (const auto& e : it) tids.push_back(std::atoi(e.path().filename().c_str()));
    std::sort(tids.begin(), tids.end());
    return tids;
}

void check_thread(int tid) {
    std::error_code ec;
    std::string dir = "/proc/" + std::to_string(tid) + "/task/" + std::to_string(tid);
    if (!std::filesystem::exists(dir, ec))
        throw Error("cannot open " + dir + ": thread " + std::to_string(tid) +
                    " does not exist or has exited");
}

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

int64_t tv_ns(const timeval& tv) {
    return int64_t(tv.tv_sec) * 1000000000 + int64_t(tv.tv_usec) * 1000;
}

}  // namespace

Session::Session(const Options& opt, const ProfilerInfo& info) : opt_(opt), info_(info) {}

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

std::string Session::wall(uint64_t perf_time) {
    return core::format_wall(clock_.to_realtime(perf_time));
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

    comms_ = std::make_unique<CommTable>();
    clock_sync_ = std::make_unique<ClockSync>(tep());
    clock_sync_->sync(clock_);

    profiler_ = info_.create(*this);
    plan_ = profiler_->plan();
    if (plan_.events.empty()) throw Error(std::string(info_.name) + ": no events to open");
    open_events();
    map_rings();

    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) throw Error::sys(errno, "epoll_create1");
    for (size_t i = 0; i < instances_.size(); i++)
        add_fd(instances_[i].ring->fd(), tag(kRing, uint32_t(i)), EPOLLIN | EPOLLHUP);
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

void Session::open_events() {
    // Attach model precedence: -p, -t, workload, CPUs (+cgroups) (SPEC §1.6).
    std::vector<int> tids;
    bool per_thread = true;
    if (!opt_.pids.empty()) {
        for (int pid : core::parse_pid_list(opt_.pids))
            for (int t : threads_of(pid)) tids.push_back(t);
    } else if (!opt_.tids.empty()) {
        tids = core::parse_pid_list(opt_.tids);
        for (int t : tids) check_thread(t);
    } else if (workload_) {
        tids = {workload_->pid()};
    } else {
        per_thread = false;
    }
    CpuMap cpus = per_thread
                      ? any_cpu()
                      : online_cpus(opt_.cpus.empty() ? std::vector<int>{} : core::parse_cpu_list(opt_.cpus));
    ThreadMap threads = per_thread ? thread_map(tids) : all_threads();
    if (!per_thread && opt_.cgroups_given) cgroups_ = open_cgroups(opt_.cgroups);

    pages_ = opt_.mmap_pages.value_or(plan_.pages);
    need_ids_ = plan_.events.size() > 1;
    evsels_.resize(plan_.events.size());
    for (size_t e = 0; e < plan_.events.size(); e++) {
        EventSpec& spec = plan_.events[e];
        perf_event_attr a = spec.attr;
        a.disabled = 1;
        a.sample_id_all = 1;  // lost records carry a time
        if (need_ids_) a.sample_type |= PERF_SAMPLE_IDENTIFIER;
        // Wake-ups (SPEC §3.2).
        if (opt_.watermark) {
            if (*opt_.watermark == 0) {
                a.watermark = 0;
                a.wakeup_events = 1;
            } else {
                a.watermark = 1;
                a.wakeup_watermark = static_cast<uint32_t>(uint64_t(pages_) * 4096 * *opt_.watermark / 100);
            }
        } else if (plan_.per_event_wakeup) {
            a.watermark = 0;
            if (!a.wakeup_events) a.wakeup_events = 1;
        } else if (!a.wakeup_watermark) {
            a.watermark = 1;
            a.wakeup_watermark = static_cast<uint32_t>(uint64_t(pages_) * 4096 / 2);
        }
        spec.attr = a;
        const std::string what = spec.sys.empty() ? spec.name : spec.sys + ":" + spec.name;
        if (cgroups_.empty()) {
            perf_evsel* ev = events_.add(a);
            events_.open(ev, cpus, threads, 0, what);
            evsels_[e].push_back(ev);
        } else {
            for (const Cgroup& cg : cgroups_) {
                perf_evsel* ev = events_.add(a);
                events_.open(ev, cpus, thread_map({cg.fd.get()}), PERF_FLAG_PID_CGROUP,
                             what + " in cgroup '" + cg.path + "'");
                evsels_[e].push_back(ev);
            }
        }
        int ncpu = perf_cpu_map__nr(cpus.get()), nthr = perf_thread_map__nr(threads.get());
        for (perf_evsel* ev : evsels_[e])
            for (int c = 0; c < ncpu; c++)
                for (int t = 0; t < (per_thread ? nthr : 1); t++) {
                    int fd = EventList::fd(ev, c, t);
                    if (!spec.filter.empty() &&
                        ::ioctl(fd, PERF_EVENT_IOC_SET_FILTER, spec.filter.c_str()) != 0)
                        throw Error(what + " filter '" + spec.filter + "' failed, " + std::strerror(errno));
                    if (need_ids_) {
                        uint64_t id = 0;
                        if (::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
                            throw Error::sys(errno, "PERF_EVENT_IOC_ID");
                        ids_.push_back({id, int(e)});
                    }
                }
    }

    int n = per_thread ? perf_thread_map__nr(threads.get()) : perf_cpu_map__nr(cpus.get());
    instances_.resize(size_t(n));
    for (int i = 0; i < n; i++) {
        if (per_thread)
            instances_[i].tid = perf_thread_map__pid(threads.get(), i);
        else
            instances_[i].cpu = perf_cpu_map__cpu(cpus.get(), i).cpu;
    }
}

void Session::map_rings() {
    const bool per_thread = instances_.empty() || instances_[0].tid >= 0;
    for (size_t i = 0; i < instances_.size(); i++) {
        const int c = per_thread ? 0 : int(i), t = per_thread ? int(i) : 0;
        int ring_fd = -1;
        // All events of one instance share one ring (PERF_EVENT_IOC_SET_OUTPUT).
        for (auto& list : evsels_)
            for (perf_evsel* ev : list) {
                int fd = EventList::fd(ev, c, t);
                if (ring_fd < 0) {
                    instances_[i].ring = std::make_unique<MappedRing>(fd, pages_);
                    ring_fd = fd;
                } else if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0) {
                    throw Error::sys(errno, "cannot share a ring buffer (PERF_EVENT_IOC_SET_OUTPUT)");
                }
            }
    }
}

void Session::enable() {
    int64_t t0 = core::monotonic_now_ns();
    events_.enable();
    int64_t t1 = core::monotonic_now_ns();
    // Atomic enable (SPEC §3.11): the kernel enables one CPU after another, so with several
    // instances a sample from before the last one was enabled is dropped, so that no state
    // starts on one CPU while another was still blind. The cut-off is the end of the enable
    // call, expressed in perf time through the clock calibration.
    if (instances_.size() > 1 && clock_.calibrated()) cutoff_ = clock_.from_monotonic(t1);
    if (opt_.verbose > 0) {
        int64_t d = (t1 - t0 + 500) / 1000;
        std::printf("%s: enabled after %lld.%06lld\n", info_.name, (long long)(d / 1000000),
                    (long long)(d % 1000000));
        std::fflush(stdout);
    }
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
                case kRing: {
                    Instance& in = instances_[idx];
                    drain(in);
                    if ((evs[i].events & EPOLLHUP) && !in.hup) {
                        // The task of a per-thread ring exited: nothing more can arrive.
                        in.hup = true;
                        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, in.ring->fd(), nullptr);
                        if (std::all_of(instances_.begin(), instances_.end(),
                                        [](const Instance& x) { return x.hup; }))
                            stopping_ = true;
                    }
                    break;
                }
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
                case kStdin:
                    on_stdin();
                    break;
            }
        }
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
                if (workload_ && workload_->reap()) stopping_ = true;
                break;
            case SIGUSR1:
                // Log rotation: re-open the -o file.
                if (!opt_.output.empty()) redirect_output();
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

void Session::drain(Instance& in) {
    // Task names first: a comm or exec record written before these samples is in the side
    // band by now, and a name must be current when its sample is printed.
    comms_->drain();
    in.ring->reader().drain([&](const perf_event_header& h) { record(in, h); });
}

void Session::drain_all() {
    for (Instance& in : instances_) drain(in);
}

int Session::event_of(uint64_t id) const {
    for (const EventIds& e : ids_)
        if (e.id == id) return e.event;
    return -1;
}

void Session::record(Instance& in, const perf_event_header& h) {
    if (h.type == PERF_RECORD_SAMPLE) {
        if (stopping_ && opt_.exit_n && samples_ >= opt_.exit_n) return;
        int e = need_ids_ ? event_of(sample_identifier(h)) : 0;
        if (e < 0) return;
        const EventSpec& spec = plan_.events[size_t(e)];
        Sample s;
        if (!decode_sample(h, spec.attr.sample_type, s)) return;
        if (s.time) in.last_time = s.time;
        if (s.time < cutoff_) return;
        s.event = &spec;
        s.event_index = e;
        s.instance = int(&in - instances_.data());
        profiler_->sample(s);
        if (opt_.exit_n && ++samples_ >= opt_.exit_n) stopping_ = true;
    } else if (h.type == PERF_RECORD_LOST) {
        // u64 id; u64 lost; then the sample_id trailer.
        if (h.size < sizeof(h) + 16) return;
        uint64_t lost;
        std::memcpy(&lost, reinterpret_cast<const uint8_t*>(&h) + sizeof(h) + 8, 8);
        LostRange r;
        r.instance = int(&in - instances_.data());
        r.cpu = in.cpu;
        r.tid = in.tid;
        r.count = lost;
        r.start = in.last_time;
        SampleId id;
        if (decode_sample_id(h, plan_.events[0].attr.sample_type, id)) r.end = id.time;
        in.lost += lost;
        lost_total_ += lost;
        lost_pending_ += lost;
        profiler_->lost(r);
        if (opt_.verbose > 0 && !opt_.exit_n) {
            std::fprintf(stderr, "%s %s: lost %llu events on %s #%d\n",
                         core::format_wall(core::realtime_now_ns()).c_str(), info_.name,
                         (unsigned long long)lost, in.cpu >= 0 ? "CPU" : "thread",
                         in.cpu >= 0 ? in.cpu : in.tid);
            lost_pending_ = 0;
        }
    }
}

void Session::report_lost() {
    if (!lost_pending_ || opt_.exit_n) return;
    std::fprintf(stderr, "%s %s: lost %llu events (total)\n",
                 core::format_wall(core::realtime_now_ns()).c_str(), info_.name,
                 (unsigned long long)lost_total_);
    lost_pending_ = 0;
}

void Session::tick() {
    drain_all();
    report_lost();
    profiler_->interval();
}

void Session::housekeeping() {
    if (!opt_.interval_ms) report_lost();  // at most once a second (SPEC §3.3)
    comms_->gc(kCommKeepNs);
    if (++house_ticks_ % kResyncTicks == 0) clock_sync_->sync(clock_);
    if (workload_ && workload_->reap()) stopping_ = true;
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

void Session::dump_state() {
    usage_self();
    std::printf("device %s: %zu instance(s), %zu event(s), %d pages per ring, %llu samples, %llu lost\n",
                info_.name, instances_.size(), plan_.events.size(), pages_, (unsigned long long)samples_,
                (unsigned long long)lost_total_);
    for (const EventSpec& e : plan_.events)
        std::printf("  event %s%s%s sample_type %#llx%s%s\n", e.sys.c_str(), e.sys.empty() ? "" : ":",
                    e.name.c_str(), (unsigned long long)e.attr.sample_type,
                    e.filter.empty() ? "" : " filter ", e.filter.c_str());
    for (const Instance& in : instances_)
        std::printf("  instance %s %d: lost %llu%s\n", in.cpu >= 0 ? "cpu" : "thread",
                    in.cpu >= 0 ? in.cpu : in.tid, (unsigned long long)in.lost, in.hup ? " (exited)" : "");
    std::printf("  task names: %zu\n", comms_->size());
    std::fflush(stdout);
}

void Session::finish() {
    events_.disable();
    drain_all();
    profiler_->finish();
    std::fflush(stdout);
    report_lost();
    workload_.reset();  // SIGTERM to a workload still running
}

}  // namespace perfprof::perf
