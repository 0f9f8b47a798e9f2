/* The few libperf internals perf-prof needs, behind a C API (the internal headers do not
 * compile as C++). */
#ifndef PERFPROF_PERF_SHIM_H
#define PERFPROF_PERF_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

struct perf_evsel;
struct perf_cpu_map;
struct perf_thread_map;

/* Like perf_evsel__open, but with perf_event_open flags (libperf always passes 0, so its fds
 * are not close-on-exec and it cannot open cgroup events) and group leaders: group_fds, when
 * not NULL, holds the group_fd for (cpu index c, thread index t) at [c * nthreads + t], -1 for
 * none. On failure everything opened so far is closed, -errno is returned and *fail_cpu_idx /
 * *fail_thread say which open failed. */
int ppshim_evsel_open(struct perf_evsel* evsel, struct perf_cpu_map* cpus, struct perf_thread_map* threads,
                      unsigned long flags, const int* group_fds, int* fail_cpu_idx, int* fail_thread);

/* The fd of an opened evsel at (cpu index, thread index), or -1. */
int ppshim_evsel_fd(struct perf_evsel* evsel, int cpu_idx, int thread);

#ifdef __cplusplus
}
#endif

#endif
