/*
 * sigself N [SIGNO] [--wait-stdin] [--silent] [--comm NAME]
 *
 * Sends itself exactly N signals SIGNO (default SIGUSR1) with kill(getpid(), SIGNO),
 * each one handled before the next is generated, then prints "done" (unless --silent)
 * and exits 0.  The task name is "sigself", or NAME with --comm (a unique name lets a
 * system-wide test filter out sigself processes that other people run meanwhile).
 *
 * --wait-stdin: first print "<pid> ready" (flushed) and wait for one line on stdin,
 *               so that a test can attach a profiler with -p/-t before anything happens.
 *               EOF on stdin before a line arrives: exit 3 without sending anything.
 *
 * Every kill() finds the signal blocked and sigsuspend() then runs the handler, so each
 * signal is generated exactly once with result 0 (never "already pending").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_signal(int signo) {
    (void)signo;
    handled++;
}

static void usage(void) {
    fprintf(stderr, "usage: sigself N [SIGNO] [--wait-stdin] [--silent] [--comm NAME]\n");
    exit(2);
}

static long parse_num(const char* s) {
    char* end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) usage();
    return v;
}

int main(int argc, char** argv) {
    long n = -1;
    int signo = SIGUSR1, wait_stdin = 0, silent = 0, npos = 0;
    const char* comm = "sigself";

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wait-stdin"))
            wait_stdin = 1;
        else if (!strcmp(argv[i], "--silent"))
            silent = 1;
        else if (!strcmp(argv[i], "--comm") && i + 1 < argc && argv[i + 1][0] && strlen(argv[i + 1]) < 16)
            comm = argv[++i];
        else if (npos == 0) {
            n = parse_num(argv[i]);
            npos++;
        } else if (npos == 1) {
            signo = (int)parse_num(argv[i]);
            npos++;
        } else
            usage();
    }
    if (n < 0 || signo < 1 || signo > SIGRTMAX || signo == SIGKILL || signo == SIGSTOP) usage();

    prctl(PR_SET_NAME, comm, 0, 0, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, NULL)) {
        perror("sigaction");
        return 1;
    }

    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, signo);
    if (sigprocmask(SIG_BLOCK, &block, &waitmask)) {
        perror("sigprocmask");
        return 1;
    }
    sigdelset(&waitmask, signo);

    if (wait_stdin) {
        char line[256];
        printf("%d ready\n", (int)getpid());
        fflush(stdout);
        if (!fgets(line, sizeof(line), stdin)) return 3;
    }

    for (long i = 0; i < n; i++) {
        if (kill(getpid(), signo)) {
            perror("kill");
            return 1;
        }
        while (handled == 0) sigsuspend(&waitmask);
        handled = 0;
    }

    if (!silent) {
        printf("done\n");
        fflush(stdout);
    }
    return 0;
}
