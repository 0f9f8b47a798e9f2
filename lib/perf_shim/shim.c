/* libperf internals: the per-(cpu, thread) fd array of an evsel. */
#include "perf_shim/shim.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <internal/evsel.h>
#include <internal/xyarray.h>
#include <perf/cpumap.h>
#include <perf/evsel.h>
#include <perf/threadmap.h>

static int* fd_slot(struct perf_evsel* evsel, int cpu_idx, int thread) {
    if (!evsel->fd || cpu_idx < 0 || thread < 0 || cpu_idx >= xyarray__max_x(evsel->fd) ||
        thread >= xyarray__max_y(evsel->fd))
        return NULL;
    return xyarray__entry(evsel->fd, cpu_idx, thread);
}

int ppshim_evsel_open(struct perf_evsel* evsel, struct perf_cpu_map* cpus, struct perf_thread_map* threads,
                      unsigned long flags, const int* group_fds, int* fail_cpu_idx, int* fail_thread) {
    int ncpus = perf_cpu_map__nr(cpus), nthreads = perf_thread_map__nr(threads);

    *fail_cpu_idx = -1;
    *fail_thread = -1;
    if (evsel->fd == NULL && perf_evsel__alloc_fd(evsel, ncpus, nthreads) < 0) return -ENOMEM;

    for (int c = 0; c < ncpus; c++) {
        int cpu = perf_cpu_map__cpu(cpus, c).cpu;

        for (int t = 0; t < nthreads; t++) {
            int* slot = fd_slot(evsel, c, t);
            int fd;

            if (!slot) return -EINVAL;
            fd = (int)syscall(SYS_perf_event_open, &evsel->attr, perf_thread_map__pid(threads, t), cpu,
                              group_fds ? group_fds[c * nthreads + t] : -1, flags);
            if (fd < 0) {
                int err = errno;

                *fail_cpu_idx = c;
                *fail_thread = t;
                perf_evsel__close(evsel);
                return -err;
            }
            *slot = fd;
        }
    }
    return 0;
}

int ppshim_evsel_fd(struct perf_evsel* evsel, int cpu_idx, int thread) {
    int* slot = fd_slot(evsel, cpu_idx, thread);

    return slot ? *slot : -1;
}
