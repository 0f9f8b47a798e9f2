/*
 * sigloop PERIOD_MS [MAX_SECONDS]
 *
 * Sends itself SIGUSR1 every PERIOD_MS milliseconds until killed, or until MAX_SECONDS
 * (default 60) have passed, so that a forgotten instance cannot linger.  Prints nothing.
 * The task name is "sigloop".  Used for "signal perf-prof in the middle of a run" tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void on_signal(int signo) {
    (void)signo;
}

static long parse_num(const char* s) {
    char* end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "usage: sigloop PERIOD_MS [MAX_SECONDS]\n");
        exit(2);
    }
    return v;
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: sigloop PERIOD_MS [MAX_SECONDS]\n");
        return 2;
    }
    long period_ms = parse_num(argv[1]);
    long max_s = argc > 2 ? parse_num(argv[2]) : 60;

    prctl(PR_SET_NAME, "sigloop", 0, 0, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);

    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        kill(getpid(), SIGUSR1);
        struct timespec ts = {period_ms / 1000, (period_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) && errno == EINTR)
            ;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= max_s) break;
    }
    return 0;
}
