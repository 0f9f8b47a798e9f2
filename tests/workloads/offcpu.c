/*
 * offcpu split MS [go]    the main thread spins in spin_work() for MS milliseconds while a
 *                         second thread naps in nap_work() (5 ms sleeps, S state) until then:
 *                         on a wall-clock profile each gets half of the time.
 * offcpu vfork N MS [go]  N times: vfork a child that sleeps MS milliseconds and exits; the
 *                         parent waits for it in vfork_wait() (D state: vfork's wait is killable,
 *                         not interruptible).
 *
 * Prints its own measures at the end: "spin_ns=... nap_ns=..." or "vfork_ns=...". With "go"
 * it prints "ready" and waits for a line on stdin first. The process is named "offcpu".
 * Frame pointers are kept and the sleeps are raw syscalls, so stacks name the functions.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "workload.h"

static const char* const kUsage = "offcpu split MS [go] | offcpu vfork N MS [go]";

static atomic_int g_stop;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) static void nap_work(void) {
    while (!atomic_load(&g_stop)) {
        struct timespec ts = {0, 5000000};
        while (raw_nanosleep(&ts) == EINTR) {
        }
    }
    __asm__ volatile("" ::: "memory");
}

static void* napper(void* arg) {
    (void)arg;
    prctl(PR_SET_NAME, "napper", 0, 0, 0);
    nap_work();
    return NULL;
}

__attribute__((noinline)) static uint64_t spin_work(int64_t until) {
    volatile uint64_t x = 0;
    while (now_ns() < until)
        for (int i = 0; i < 1000; i++) x = x * 31 + (uint64_t)i;
    return x;
}

static int split(long ms) {
    pthread_t t;
    const int64_t start = now_ns();
    if (pthread_create(&t, NULL, napper, NULL) != 0) return 1;
    spin_work(start + ms * 1000000);
    const int64_t spun = now_ns() - start;
    atomic_store(&g_stop, 1);
    pthread_join(t, NULL);
    printf("spin_ns=%lld\n", (long long)spun);
    return 0;
}

__attribute__((noinline)) static int vfork_wait(long ms) {
    const pid_t pid = vfork();
    if (pid == 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (raw_nanosleep(&ts) == EINTR) {
        }
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
    __asm__ volatile("" ::: "memory");
    return 0;
}

static int vforks(long n, long ms) {
    const int64_t start = now_ns();
    for (long i = 0; i < n; i++)
        if (vfork_wait(ms)) return 1;
    printf("vfork_ns=%lld\n", (long long)(now_ns() - start));
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    const int is_split = strcmp(argv[1], "split") == 0, is_vfork = strcmp(argv[1], "vfork") == 0;
    const int words = is_split ? 3 : 4;
    if ((!is_split && !is_vfork) || argc < words || argc > words + 1 ||
        (argc == words + 1 && strcmp(argv[words], "go") != 0)) {
        fprintf(stderr, "usage: %s\n", kUsage);
        return 2;
    }
    const long a = parse_num(argv[2], kUsage), b = is_vfork ? parse_num(argv[3], kUsage) : 0;
    prctl(PR_SET_NAME, "offcpu", 0, 0, 0);
    if (argc == words + 1) {
        printf("ready\n");
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) return 1;
    }
    const int rc = is_split ? split(a) : vforks(a, b);
    fflush(stdout);
    return rc;
}
