/*
 * blocker N MS
 *
 * N times: vfork() a child that sleeps MS milliseconds and _exit()s. The parent waits for
 * the child in the kernel (wait_for_vfork_done: TASK_KILLABLE, reported as D), so it shows N
 * uninterruptible sleeps of about MS each. The task name is "blocker".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char* const kUsage = "blocker N MS";

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    long n = parse_num(argv[1], kUsage), ms = parse_num(argv[2], kUsage);
    prctl(PR_SET_NAME, "blocker", 0, 0, 0);
    for (long i = 0; i < n; i++) {
        pid_t child = vfork();
        if (child < 0) return 1;
        if (child == 0) {
            /* Only raw system calls in the vfork child: it shares our memory and stack. */
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            syscall(SYS_nanosleep, &ts, NULL);
            syscall(SYS_exit, 0);
        }
        waitpid(child, NULL, 0);
    }
    return 0;
}
