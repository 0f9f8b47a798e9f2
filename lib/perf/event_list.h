// RAII over libperf: cpu and thread maps, and an event list whose events we open ourselves
// (close-on-exec, cgroup flag) through the shim. Namespace perfprof::perf.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <perf/cpumap.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/threadmap.h>
}

#include "core/fd.h"

namespace perfprof::perf {

using CpuMap = core::CRef<perf_cpu_map, perf_cpu_map__get, perf_cpu_map__put>;
using ThreadMap = core::CRef<perf_thread_map, perf_thread_map__get, perf_thread_map__put>;

// Online CPUs, optionally intersected with a parsed -C list.
CpuMap online_cpus(const std::vector<int>& only = {});
// A map of one "any CPU" (-1) entry, for per-thread events.
CpuMap any_cpu();
ThreadMap thread_map(const std::vector<int>& tids);
// A map of one entry, pid -1: every task on the CPU.
ThreadMap all_threads();

class EventList {
public:
    EventList();
    EventList(EventList&&) noexcept = default;
    EventList& operator=(EventList&&) noexcept = default;

    // Adds an event; the list owns it.
    perf_evsel* add(const perf_event_attr& attr);
    // Opens `ev` on every cpu x thread of the maps. On failure throws an explained Error
    // (DESIGN.md "Errors") naming `what` (e.g. "signal:signal_generate"). `group_fds`: the
    // group leader's fd per (cpu index c, thread index t) at [c * nthreads + t], -1 for none.
    void open(perf_evsel* ev, const CpuMap& cpus, const ThreadMap& threads, unsigned long flags,
              const std::string& what, const std::vector<int>* group_fds = nullptr);
    // The fd of an opened event at (cpu index, thread index).
    static int fd(perf_evsel* ev, int cpu_idx, int thread);
    void enable();
    void disable();
    const std::vector<perf_evsel*>& events() const { return events_; }

private:
    core::CPtr<perf_evlist, perf_evlist__delete> list_;
    std::vector<perf_evsel*> events_;
};

// One event on the calling thread, any CPU, close-on-exec, outside any list: for probing what
// the kernel accepts and for reading an mmap page. An invalid Fd (errno set) on failure.
core::Fd open_on_self(const perf_event_attr& attr);

// kernel.perf_event_max_sample_rate: the highest sample_freq perf_event_open accepts (EINVAL
// above it). The kernel lowers it by itself when sampling interrupts take too long. 0 when
// it cannot be read.
uint64_t max_sample_rate();

// Turns a perf_event_open errno into an Error with advice. `target` says where it was
// opened ("CPU 1", "thread 42", "cgroup /x").
[[noreturn]] void throw_open_error(int err, const std::string& what, const perf_event_attr& attr,
                                   const std::string& target);

}  // namespace perfprof::perf
