// Context-switch storm for bench/trace_bench.py: two threads pass the turn back and forth, through
// a futex (default, the cheaper hand-off: more switches per second) or through two pipes. Each
// round trip blocks and wakes each thread once, so it costs two sched_switch
// events when both threads share a CPU (A→B, B→A) and up to four when they run on two CPUs
// (each CPU switches thread→idle→thread; fewer when a futex wait finds the turn already passed).
//
//   pingpong [-m same|diff] [-k futex|pipe] [-c CPU[,CPU]] [-d SECONDS] [-n ROUND_TRIPS]
//            [-r ROUND_TRIPS_PER_SEC]
//
// -m same: both threads on the first CPU of -c (default 0); -m diff: one on each (default 0,1).
// Stops after -n round trips or -d seconds (default 2 s), whichever comes first. -r paces the
// round trips in 1 ms periods: RATE/1000 round trips at full speed, then sleep until the next
// period (two switches per period of its own, and the CPU stays free for others meanwhile).
// Prints one line: "pingpong mode=M via=K cpus=A,B round_trips=N seconds=S rate=R" (R per second).
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int to_b[2], to_a[2];
static int use_futex = 1;
// Futex hand-off: 0 = A's turn, 1 = B's turn, 2 = B must quit. Only the thread whose turn it is
// not ever waits, so a wake of one waiter always reaches the right thread.
static _Atomic int turn;

static void futex_wait(_Atomic int* addr, int val) {
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void futex_wake(_Atomic int* addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char* what) {
    fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err) {
        errno = err;
        die("pthread_setaffinity_np");
    }
}

static void xwrite(int fd, char c) {
    while (write(fd, &c, 1) != 1)
        if (errno != EINTR) die("write");
}

static char xread(int fd) {
    char c;
    ssize_t n;
    while ((n = read(fd, &c, 1)) != 1) {
        if (n == 0) {
            errno = EPIPE;
            die("read");
        }
        if (errno != EINTR) die("read");
    }
    return c;
}

// A hands the turn to B and waits until B hands it back (or asks B to quit with c == 'q').
static void hand_off(char c) {
    if (!use_futex) {
        xwrite(to_b[1], c);
        if (c != 'q') xread(to_a[0]);
        return;
    }
    turn = c == 'q' ? 2 : 1;
    futex_wake(&turn);
    if (c == 'q') return;
    while (turn == 1) futex_wait(&turn, 1);
}

static void* thread_b(void* arg) {
    pin(*(int*)arg);
    if (use_futex) {
        for (;;) {
            int v;
            while ((v = turn) == 0) futex_wait(&turn, 0);
            if (v == 2) return NULL;
            turn = 0;
            futex_wake(&turn);
        }
    }
    for (;;) {
        char c = xread(to_b[0]);
        if (c == 'q') return NULL;
        xwrite(to_a[1], c);
    }
}

int main(int argc, char** argv) {
    const char* mode = "same";
    const char* cpus = NULL;
    double seconds = 2.0, rate = 0;
    unsigned long long max_trips = 0;
    int opt;
    while ((opt = getopt(argc, argv, "m:k:c:d:n:r:")) != -1) {
        switch (opt) {
            case 'k':
                use_futex = strcmp(optarg, "pipe") != 0;
                break;
            case 'm':
                mode = optarg;
                break;
            case 'c':
                cpus = optarg;
                break;
            case 'd':
                seconds = atof(optarg);
                break;
            case 'n':
                max_trips = strtoull(optarg, NULL, 0);
                break;
            case 'r':
                rate = atof(optarg);
                break;
            default:
                fprintf(
                    stderr,
                    "usage: %s [-m same|diff] [-k futex|pipe] [-c CPU[,CPU]] [-d SECONDS] [-n N] [-r RATE]\n",
                    argv[0]);
                return 2;
        }
    }
    int same = strcmp(mode, "same") == 0;
    if (!same && strcmp(mode, "diff") != 0) {
        fprintf(stderr, "pingpong: mode must be same or diff\n");
        return 2;
    }
    int cpu_a = 0, cpu_b = same ? 0 : 1;
    if (cpus) {
        char* end;
        cpu_a = (int)strtol(cpus, &end, 10);
        cpu_b = *end == ',' ? (int)strtol(end + 1, NULL, 10) : (same ? cpu_a : cpu_a + 1);
        if (same) cpu_b = cpu_a;
    }
    if (pipe(to_b) || pipe(to_a)) die("pipe");

    pthread_t tb;
    int err = pthread_create(&tb, NULL, thread_b, &cpu_b);
    if (err) {
        errno = err;
        die("pthread_create");
    }
    pin(cpu_a);
    // One untimed round trip: both threads are running and pinned before the clock starts.
    hand_off('x');

    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
    const uint64_t period = 1000000;
    double per_period = rate / 1e3, owed = 0;
    uint64_t next = start + period;
    unsigned long long trips = 0;
    uint64_t t = start;
    while ((!max_trips || trips < max_trips) && t < end) {
        if (rate > 0) {
            owed += per_period;
            for (; owed >= 1 && (!max_trips || trips < max_trips); owed -= 1, ++trips) hand_off('x');
            t = now_ns();
            if (t < next) {
                struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                next += period;
            } else if (t - next > 10 * period) {
                next = t + period;  // far behind (descheduled): do not burst to catch up
            } else {
                next += period;  // a little behind: catch up in the next periods
            }
        } else {
            hand_off('x');
            ++trips;
        }
        t = now_ns();
    }
    double secs = (double)(t - start) / 1e9;
    hand_off('q');
    pthread_join(tb, NULL);
    printf("pingpong mode=%s via=%s cpus=%d,%d round_trips=%llu seconds=%.3f rate=%.1f\n", mode,
           use_futex ? "futex" : "pipe", cpu_a, cpu_b, trips, secs, secs > 0 ? (double)trips / secs : 0.0);
    return 0;
}
