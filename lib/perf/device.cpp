// Device: the run-time services of Context over a device's opened events (read_counter,
// set_filter, enable_event) and its instances.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "perf/device.h"

namespace perfprof::perf {

int Device::instances() const {
    return ring_per_cpu ? perf_cpu_map__nr(cpus.get()) : perf_thread_map__nr(thread_map.get());
}

int Device::instance_cpu(int instance) const {
    if (!ring_per_cpu || instance < 0 || instance >= perf_cpu_map__nr(cpus.get())) return -1;
    return perf_cpu_map__cpu(cpus.get(), instance).cpu;
}

namespace {

// The (cpu index, thread index) of planned event `e`'s evsels that make `instance`.
bool locate(const Device& d, size_t e, int instance, int& c, int& t) {
    if (e >= d.evsels.size() || d.evsels[e].empty() || instance < 0) return false;
    if (d.ring_per_cpu) {
        const std::vector<int>& idx = d.cpu_instances[e];
        auto it = std::find(idx.begin(), idx.end(), instance);
        if (it == idx.end()) return false;  // cpus= left this CPU out
        c = int(it - idx.begin());
        t = 0;
    } else {
        if (instance >= perf_thread_map__nr(d.thread_map.get())) return false;
        c = 0;
        t = instance;
    }
    return true;
}

}  // namespace

bool Device::read_counter(int event_index, int instance, std::vector<uint64_t>& words) {
    int c = 0, t = 0;
    if (event_index < 0 || !locate(*this, size_t(event_index), instance, c, t)) return false;
    const int fd = EventList::fd(evsels[size_t(event_index)][0], c, t);
    if (fd < 0) return false;
    words.resize(512);
    const ssize_t n = ::read(fd, words.data(), words.size() * sizeof(uint64_t));
    if (n <= 0) {
        words.clear();
        return false;
    }
    words.resize(size_t(n) / sizeof(uint64_t));
    return true;
}

std::string Device::set_filter(int event_index, int instance, const std::string& filter) {
    if (event_index < 0 || size_t(event_index) >= evsels.size()) return "no such event";
    const size_t e = size_t(event_index);
    const int nthr = perf_thread_map__nr(thread_map.get());
    int c0 = 0, t0 = 0;
    if (instance >= 0 && !locate(*this, e, instance, c0, t0)) return "not open on that instance";
    for (perf_evsel* ev : evsels[e]) {
        const int ncpu = int(cpu_instances.at(e).size());
        for (int c = 0; c < ncpu; c++) {
            if (instance >= 0 && ring_per_cpu && c != c0) continue;
            for (int t = 0; t < (per_thread ? nthr : 1); t++) {
                if (instance >= 0 && !ring_per_cpu && t != t0) continue;
                const int fd = EventList::fd(ev, c, t);
                if (fd >= 0 && ::ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter.c_str()) != 0) return std::strerror(errno);
            }
        }
    }
    return "";
}

void Device::enable_event(int event_index, bool on) {
    if (event_index < 0 || size_t(event_index) >= evsels.size()) return;
    for (perf_evsel* ev : evsels[size_t(event_index)]) {
        if (on)
            perf_evsel__enable(ev);
        else
            perf_evsel__disable(ev);
    }
}

}  // namespace perfprof::perf
