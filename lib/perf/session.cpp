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
#include "stack/flame_graph.h"
#include "stack/stack_printer.h"

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

// SPEC §2.8 rule 1: OPTIONS split on single spaces, whole-text quotes already removed.
std::vector<std::string> split_spaces(const std::string& s) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i <= s.size()) {
        size_t j = s.find(' ', i);
        if (j == std::string::npos) j = s.size();
        if (j > i) words.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return words;
}

}  // namespace

Session::Session(const Options& opt, const ProfilerInfo& info) : opt_(opt), info_(info) {
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

int64_t Session::realtime(uint64_t perf_time) const {
    return clock_.to_realtime(perf_time);
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
    // Symbols of a process are kept as long as its name: samples read after its exit record
    // still resolve, and a reused pid gets fresh maps.
    comms_->forget = [](uint32_t tid) { stack::forget_process(tid); };
    comms_->on_exec = [](uint32_t pid) { stack::forget_process(pid); };
    comms_->on_mmap = [](const CommTable::Mapping& m) {
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
        stack::shared_syms().add_mapping(int(m.pid), l);
    };
    clock_sync_ = std::make_unique<ClockSync>(tep());
    clock_sync_->sync(clock_);

    attach();
    Device& top = add_device(info_, opt_, nullptr);
    open_device(top);
    for (auto& d : devices_) overwrite_ |= d->plan.overwrite;
    if (top.plan.order || opt_.order) orderer_ = std::make_unique<Orderer>(rings_.size());

    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_) throw Error::sys(errno, "epoll_create1");
    bool batched = false;
    for (size_t i = 0; i < rings_.size(); i++) {
        const Device& d = *rings_[i].dev;
        // Overwrite rings are not watched: they are read at ticks and at exit (SPEC §4.3).
        if (d.plan.overwrite) continue;
        add_fd(rings_[i].ring->fd(), tag(kRing, uint32_t(i)), EPOLLIN | EPOLLHUP);
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

void Session::attach() {
    // Attach model precedence: -p, -t, workload, CPUs (+cgroups) (SPEC §1.6).
    std::vector<int> tids;
    per_thread_ = true;
    if (!opt_.pids.empty()) {
        for (int pid : core::parse_pid_list(opt_.pids))
            for (int t : threads_of(pid)) tids.push_back(t);
    } else if (!opt_.tids.empty()) {
        tids = core::parse_pid_list(opt_.tids);
        for (int t : tids) check_thread(t);
    } else if (workload_) {
        tids = {workload_->pid()};
    } else {
        per_thread_ = false;
    }
    // The kernel refuses to mmap an inherited event that is not bound to a CPU, so with
    // --inherit the tasks are watched on every CPU, one ring per CPU (as perf record does).
    ring_per_cpu_ = !per_thread_ || opt_.inherit;
    cpus_ = !ring_per_cpu_ ? any_cpu()
            : per_thread_
                ? online_cpus()
                : online_cpus(opt_.cpus.empty() ? std::vector<int>{} : core::parse_cpu_list(opt_.cpus));
    threads_ = per_thread_ ? thread_map(tids) : all_threads();
    if (!per_thread_ && opt_.cgroups_given) cgroups_ = open_cgroups(opt_.cgroups);
}

Session::Device& Session::add_device(const ProfilerInfo& info, const Options& opt, Device* parent) {
    devices_.push_back(std::make_unique<Device>(*this, info, opt, parent));
    Device& d = *devices_.back();
    d.profiler = info.create(d);
    d.plan = d.profiler->plan();
    if (d.plan.events.empty() && d.plan.nested.empty())
        throw Error(std::string(info.name) + ": no events to open");
    return d;
}

void Session::open_device(Device& d) {
    const int ncpu = perf_cpu_map__nr(cpus_.get()), nthr = perf_thread_map__nr(threads_.get());
    d.pages = d.opt.mmap_pages.value_or(d.plan.pages);
    d.need_ids = d.plan.events.size() > 1;
    d.evsels.resize(d.plan.events.size());
    d.user_filters.resize(d.plan.events.size());
    for (size_t e = 0; e < d.plan.events.size(); e++) {
        EventSpec& spec = d.plan.events[e];
        perf_event_attr a = spec.attr;
        a.size = sizeof(a);
        a.disabled = 1;
        a.sample_id_all = 1;  // lost records carry a time
        if (d.need_ids) a.sample_type |= PERF_SAMPLE_IDENTIFIER;
        if (!spec.probe.empty()) a.config1 = reinterpret_cast<uintptr_t>(spec.probe.c_str());
        // Wake-ups (SPEC §3.2, with batching as our default where SPEC wakes per event).
        if (d.plan.overwrite) {
            a.write_backward = 1;
            a.watermark = 1;
            a.wakeup_watermark = static_cast<uint32_t>(uint64_t(d.pages) * 4096);
        } else if (d.opt.watermark) {
            if (*d.opt.watermark == 0) {
                a.watermark = 0;
                a.wakeup_events = 1;
            } else {
                a.watermark = 1;
                a.wakeup_watermark = static_cast<uint32_t>(uint64_t(d.pages) * 4096 * *d.opt.watermark / 100);
            }
        } else if (d.plan.per_event_wakeup) {
            a.watermark = 0;
            if (!a.wakeup_events) a.wakeup_events = 1;
        } else if (!a.wakeup_watermark) {
            a.watermark = 1;
            a.wakeup_watermark = static_cast<uint32_t>(uint64_t(d.pages) * 4096 / 2);
        }
        spec.attr = a;
        if (e == 0) {
            d.sample_type = a.sample_type;
            d.time_off = 8 * (!!(a.sample_type & PERF_SAMPLE_IDENTIFIER) +
                              !!(a.sample_type & PERF_SAMPLE_IP) + !!(a.sample_type & PERF_SAMPLE_TID));
        }
        const std::string what = event_name(spec);

        // cpus= opens the event on the intersection with the device's CPUs; an empty
        // intersection ignores the attribute (SPEC §2.5).
        CpuMap cpus = cpus_;
        std::vector<int> cpu_index;
        if (ring_per_cpu_ && !spec.cpus.empty()) {
            std::vector<int> keep;
            for (int c = 0; c < ncpu; c++) {
                int cpu = perf_cpu_map__cpu(cpus_.get(), c).cpu;
                if (std::find(spec.cpus.begin(), spec.cpus.end(), cpu) != spec.cpus.end()) {
                    keep.push_back(cpu);
                    cpu_index.push_back(c);
                }
            }
            if (!keep.empty())
                cpus = online_cpus(keep);
            else
                cpu_index.clear();
        }
        if (cpu_index.empty())
            for (int c = 0; c < ncpu; c++) cpu_index.push_back(c);

        if (cgroups_.empty()) {
            perf_evsel* ev = events_.add(a);
            events_.open(ev, cpus, threads_, 0, what);
            d.evsels[e].push_back(ev);
        } else {
            for (const Cgroup& cg : cgroups_) {
                perf_evsel* ev = events_.add(a);
                events_.open(ev, cpus, thread_map({cg.fd.get()}), PERF_FLAG_PID_CGROUP,
                             what + " in cgroup '" + cg.path + "'");
                d.evsels[e].push_back(ev);
            }
        }
        for (perf_evsel* ev : d.evsels[e])
            for (size_t c = 0; c < cpu_index.size(); c++)
                for (int t = 0; t < (per_thread_ ? nthr : 1); t++) {
                    int fd = EventList::fd(ev, int(c), t);
                    install_filter(d, e, fd, what);
                    if (d.need_ids) {
                        uint64_t id = 0;
                        if (::ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
                            throw Error::sys(errno, "PERF_EVENT_IOC_ID");
                        d.ids.emplace(id, int(e));
                    }
                }
        d.instances.push_back(std::move(cpu_index));
    }
    if (!d.plan.events.empty()) map_rings(d);
    open_nested(d);
}

void Session::install_filter(Device& d, size_t e, int fd, const std::string& what) {
    EventSpec& spec = d.plan.events[e];
    // Every instance gets the program, or the run stops: never sample unfiltered (SPEC §1.9).
    if (spec.bpf_prog >= 0 && ::ioctl(fd, PERF_EVENT_IOC_SET_BPF, spec.bpf_prog) != 0)
        throw Error::sys(errno, what + ": attaching the eBPF filter (PERF_EVENT_IOC_SET_BPF)");
    if (spec.filter.empty() || d.user_filters[e]) return;
    if (::ioctl(fd, PERF_EVENT_IOC_SET_FILTER, spec.filter.c_str()) == 0) return;
    const int err = errno;
    if (d.plan.user_filter && !spec.fields.empty()) {
        // The kernel compares fields with constants only; the same expression evaluated per
        // sample here keeps the meaning (SPEC §2.6.2).
        try {
            d.user_filters[e] = std::make_unique<filter::Program>(filter::compile(spec.filter, spec.fields));
        } catch (const filter::CompileError& ce) {
            std::fputs(ce.diagnostics().c_str(), stdout);
            std::fflush(stdout);
            throw Error(what + " filter '" + spec.filter + "' failed, " + std::strerror(err));
        }
        std::printf("%s filters '%s' in userspace\n", what.c_str(), spec.filter.c_str());
        return;
    }
    throw Error(what + " filter '" + spec.filter + "' failed, " + std::strerror(err));
}

void Session::open_nested(Device& parent) {
    for (const NestedSpec& n : parent.plan.nested) {
        std::vector<std::string> words{n.profiler};
        for (std::string& w : split_spaces(n.options)) words.push_back(std::move(w));
        cli::Parsed p = cli::parse(words, all_profilers());
        if (p.action != cli::Action::Run || !p.profiler || p.profiler->run_words)
            throw Error("profiler " + n.profiler + " cannot be nested in " + parent.info.name);
        if (!p.opt.workload.empty())
            throw Error::usage("nested " + n.profiler + ": unexpected word '" + p.opt.workload[0] + "'");
        // Opened on exactly the parent's CPUs and threads, so instances correspond (SPEC §2.8).
        Options o = p.opt;
        o.cpus = parent.opt.cpus;
        o.pids = parent.opt.pids;
        o.tids = parent.opt.tids;
        o.workload.clear();
        Device& child = add_device(*p.profiler, o, &parent);
        if (!n.cpus.empty())
            for (EventSpec& e : child.plan.events) e.cpus = n.cpus;
        // A nested child wakes in batches unless told otherwise (SPEC §3.2).
        child.plan.per_event_wakeup = false;
        open_device(child);
    }
}

void Session::map_rings(Device& d) {
    const int nthr = perf_thread_map__nr(threads_.get());
    const int n = ring_per_cpu_ ? perf_cpu_map__nr(cpus_.get()) : nthr;
    for (int i = 0; i < n; i++) {
        Ring r;
        r.dev = &d;
        r.instance = i;
        if (ring_per_cpu_)
            r.cpu = perf_cpu_map__cpu(cpus_.get(), i).cpu;
        else
            r.tid = perf_thread_map__pid(threads_.get(), i);
        int ring_fd = -1;
        // All events of one instance share one ring (PERF_EVENT_IOC_SET_OUTPUT).
        for (size_t e = 0; e < d.evsels.size(); e++) {
            const std::vector<int>& idx = d.instances[e];
            int c = 0, t0 = i, t1 = i + 1;
            if (ring_per_cpu_) {
                auto it = std::find(idx.begin(), idx.end(), i);
                if (it == idx.end()) continue;  // cpus= left this CPU out
                c = int(it - idx.begin());
                t0 = 0;
                t1 = per_thread_ ? nthr : 1;  // --inherit: every thread's event on this CPU
            }
            for (perf_evsel* ev : d.evsels[e])
                for (int t = t0; t < t1; t++) {
                    int fd = EventList::fd(ev, c, t);
                    if (ring_fd < 0) {
                        r.ring = std::make_unique<MappedRing>(fd, d.pages, d.plan.overwrite);
                        ring_fd = fd;
                    } else if (::ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0) {
                        throw Error::sys(errno, "cannot share a ring buffer (PERF_EVENT_IOC_SET_OUTPUT)");
                    }
                }
        }
        if (!r.ring) continue;
        d.rings.push_back(rings_.size());
        rings_.push_back(std::move(r));
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
    if (rings_.size() > 1 && !overwrite_ && clock_.calibrated()) cutoff_ = clock_.from_monotonic(t1);
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
    if (!r.dev->closed) r.dev->profiler->lost(l);
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
    if (!decode_sample(h, spec.attr.sample_type, s)) return;
    s.time = time;  // raised when the Orderer fixed it
    s.event = &spec;
    s.event_index = e;
    s.instance = r.instance;
    if (const filter::Program* f = d.user_filters[size_t(e)].get()) {
        filter::EvalContext c;
        c.data = s.raw;
        c.size = s.raw_size;
        c.cpu = int(s.cpu);
        c.pid = int(s.pid);
        c.hooks = &hooks_;
        if (f->eval(c) <= 0) return;  // dropped: does not count for -N (SPEC §2.6.2)
    }
    if (d.parent) {
        // Forwarded to the parent, which asks us to print it (SPEC §2.8).
        s.from = d.profiler.get();
        Device& p = *d.parent;
        if (!p.closed) {
            p.profiler->sample(s);
            if (p.opt.exit_n && ++p.samples >= p.opt.exit_n) {
                p.closed = true;
                if (!p.parent) stopping_ = true;
            }
        }
        if (d.opt.exit_n && ++d.samples >= d.opt.exit_n) {
            // -N of a child closes the child only; the parent keeps running.
            d.closed = true;
            for (auto& list : d.evsels)
                for (perf_evsel* ev : list) perf_evsel__disable(ev);
        }
        return;
    }
    d.profiler->sample(s);
    if (d.opt.exit_n && ++d.samples >= d.opt.exit_n) {
        d.closed = true;
        stopping_ = true;
    }
}

void Session::tick() {
    drain_all();
    read_overwrite();
    for (auto& d : devices_) {
        report_lost(*d);
        // Children print no periodic statistics of their own (SPEC §2.8 rule 7).
        if (!d->parent) d->profiler->interval();
    }
}

void Session::housekeeping() {
    if (!opt_.interval_ms)
        for (auto& d : devices_) report_lost(*d);  // at most once a second (SPEC §3.3)
    comms_->gc(kCommKeepNs);
    if (++house_ticks_ % kResyncTicks == 0) clock_sync_->sync(clock_);
    if (workload_ && workload_->reap()) stopping_ = true;
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
    std::fflush(stdout);
    for (auto& d : devices_) report_lost(*d);
    workload_.reset();  // SIGTERM to a workload still running
}

}  // namespace perfprof::perf
