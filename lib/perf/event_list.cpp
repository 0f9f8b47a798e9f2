#include "perf/event_list.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "perf-prof/error.h"
#include "perf_shim/shim.h"

namespace perfprof::perf {

namespace {

// libperf prints through this hook; its messages are debugging noise for our users.
int quiet_print(enum libperf_print_level, const char*, va_list) {
    return 0;
}

// libperf's print hook is the library's global: set once, before the first evlist, by the
// function-local static below (thread-safe). Process-wide state that stays (ARCHITECTURE.md).
struct LibperfInit {
    LibperfInit() { libperf_init(quiet_print); }
};

int read_int_file(const char* path, int fallback) {
    std::ifstream f(path);
    int v = fallback;
    if (f) f >> v;
    return v;
}

}  // namespace

CpuMap online_cpus(const std::vector<int>& only) {
    CpuMap online = CpuMap::adopt(perf_cpu_map__new(nullptr));
    if (!online) throw Error("cannot read the online CPU list");
    if (only.empty()) return online;
    std::string list;
    for (int c : only) {
        if (!perf_cpu_map__has(online.get(), perf_cpu{c})) continue;
        if (!list.empty()) list += ',';
        list += std::to_string(c);
    }
    if (list.empty()) throw Error("none of the CPUs given with -C is online");
    CpuMap m = CpuMap::adopt(perf_cpu_map__new(list.c_str()));
    if (!m) throw Error("cannot build the CPU map '" + list + "'");
    return m;
}

core::Fd open_on_self(const perf_event_attr& attr) {
    perf_event_attr a = attr;
    return core::Fd(static_cast<int>(::syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC)));
}

CpuMap any_cpu() {
    return CpuMap::adopt(perf_cpu_map__dummy_new());
}

ThreadMap thread_map(const std::vector<int>& tids) {
    std::vector<pid_t> v(tids.begin(), tids.end());
    ThreadMap m = ThreadMap::adopt(perf_thread_map__new_array(static_cast<int>(v.size()), v.data()));
    if (!m) throw Error("out of memory building the thread map");
    return m;
}

ThreadMap all_threads() {
    return ThreadMap::adopt(perf_thread_map__new_dummy());
}

EventList::EventList() {
    static LibperfInit once;
    list_.reset(perf_evlist__new());
    if (!list_) throw Error("out of memory creating the event list");
}

perf_evsel* EventList::add(const perf_event_attr& attr) {
    perf_event_attr copy = attr;
    copy.size = sizeof(copy);
    perf_evsel* ev = perf_evsel__new(&copy);
    if (!ev) throw Error("out of memory creating an event");
    perf_evlist__add(list_.get(), ev);  // the list owns it from here
    events_.push_back(ev);
    return ev;
}

void EventList::open(perf_evsel* ev, const CpuMap& cpus, const ThreadMap& threads, unsigned long flags,
                     const std::string& what, const std::vector<int>* group_fds) {
    int fail_cpu = -1, fail_thread = -1;
    int ret = ppshim_evsel_open(ev, cpus.get(), threads.get(), flags | PERF_FLAG_FD_CLOEXEC,
                                group_fds ? group_fds->data() : nullptr, &fail_cpu, &fail_thread);
    if (ret == 0) return;
    std::string target;
    int pid = fail_thread >= 0 ? perf_thread_map__pid(threads.get(), fail_thread) : -1;
    int cpu = fail_cpu >= 0 ? perf_cpu_map__cpu(cpus.get(), fail_cpu).cpu : -1;
    if (flags & PERF_FLAG_PID_CGROUP)
        target = "cgroup";
    else if (pid > 0)
        target = "thread " + std::to_string(pid);
    else if (cpu >= 0)
        target = "CPU " + std::to_string(cpu);
    throw_open_error(-ret, what, *perf_evsel__attr(ev), target);
}

int EventList::fd(perf_evsel* ev, int cpu_idx, int thread) {
    return ppshim_evsel_fd(ev, cpu_idx, thread);
}

void EventList::enable() {
    perf_evlist__enable(list_.get());
}
void EventList::disable() {
    perf_evlist__disable(list_.get());
}

uint64_t max_sample_rate() {
    const int rate = read_int_file("/proc/sys/kernel/perf_event_max_sample_rate", 0);
    return rate > 0 ? uint64_t(rate) : 0;
}

void throw_open_error(int err, const std::string& what, const perf_event_attr& attr,
                      const std::string& target) {
    std::string msg =
        "cannot open " + what + (target.empty() ? "" : " on " + target) + ": " + std::strerror(err);
    std::string hint;
    switch (err) {
        case EACCES:
        case EPERM: {
            int paranoid = read_int_file("/proc/sys/kernel/perf_event_paranoid", 2);
            hint = "kernel.perf_event_paranoid is " + std::to_string(paranoid) +
                   "; run as root, or lower it: sysctl kernel.perf_event_paranoid=-1";
            break;
        }
        case EOPNOTSUPP:
            // The event exists; the PMU lacks something asked of it (sampling, exclude bits).
            if (attr.type != PERF_TYPE_HARDWARE && attr.type != PERF_TYPE_HW_CACHE) {
                hint = "this PMU cannot do what the event asks (sampling, or one of the exclude-* filters)";
                break;
            }
            [[fallthrough]];
        case ENOENT:
        case ENODEV:
            if (attr.type == PERF_TYPE_HARDWARE || attr.type == PERF_TYPE_HW_CACHE)
                hint = "this machine has no hardware PMU (a VM?); use a software event such as cpu-clock";
            else
                hint = "the event does not exist on this kernel; see 'perf-prof list'";
            break;
        case ESRCH:
            msg = "cannot open " + what + " on " + target + ": the task has exited";
            break;
        case EOVERFLOW: {
            // sample_max_stack above the sysctl; 0 asks for the sysctl's own value.
            const int max = read_int_file("/proc/sys/kernel/perf_event_max_stack", 0);
            if ((attr.sample_type & PERF_SAMPLE_CALLCHAIN) && attr.sample_max_stack > max && max > 0) {
                msg = "cannot open " + what + (target.empty() ? "" : " on " + target) + ": a stack of " +
                      std::to_string(attr.sample_max_stack) +
                      " frames is above kernel.perf_event_max_stack (" + std::to_string(max) + ")";
                hint = "ask for fewer frames (max-stack=" + std::to_string(max) +
                       "), or raise the limit: sysctl kernel.perf_event_max_stack=" +
                       std::to_string(attr.sample_max_stack);
            }
            break;
        }
        case EMFILE:
            hint = "too many open files: raise the limit with 'ulimit -n'";
            break;
        case ENOMEM:
            hint = "the kernel could not allocate the event; try fewer CPUs or threads";
            break;
        case EBUSY:
            hint = "another tool holds this PMU exclusively";
            break;
        case EINVAL:
            if (const uint64_t max = max_sample_rate(); attr.freq && max && attr.sample_freq > max) {
                msg = "cannot open " + what + (target.empty() ? "" : " on " + target) + ": " +
                      std::to_string(attr.sample_freq) + " samples a second is above " +
                      "kernel.perf_event_max_sample_rate (" + std::to_string(max) + ")";
                hint = "sample less often, or raise the limit: sysctl kernel.perf_event_max_sample_rate=" +
                       std::to_string(attr.sample_freq);
                break;
            }
            // Before Linux 6.12 an inherited event could not read its counter into samples.
            if (attr.inherit && (attr.sample_type & PERF_SAMPLE_READ))
                hint = "this kernel cannot follow new tasks with this event (inherit with "
                       "PERF_SAMPLE_READ needs Linux 6.12); add --no-inherit";
            else
                hint = "the kernel rejected the event attributes (sample type or flags unsupported)";
            break;
        default:
            break;
    }
    throw Error(msg, hint);
}

}  // namespace perfprof::perf
