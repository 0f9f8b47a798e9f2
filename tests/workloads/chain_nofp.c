/*
 * chain_nofp MODE ARGS...   (built -O2 -fomit-frame-pointer: no function keeps a frame pointer)
 *
 * Known call stacks for --call-graph dwarf, which a frame-pointer walk cannot recover here:
 *   chain MS       main -> a -> b -> hot, hot busy for MS ms of CPU; a has 2 KiB of locals, so
 *                  a copy of 1 KiB of the stack ends inside its frame
 *   sleep N MS     main -> a -> b -> nap, which sleeps N times MS ms (nanosleep in libc)
 *   hold N MS      main -> a -> b -> hold_fds, which creates N eventfds (one kmalloc'd
 *                  eventfd_ctx each, in do_eventfd), prints "held", sleeps MS ms and exits
 *   dlopen MS      dlopen("libcfi_plugin.so", beside this binary) after start, then
 *                  main -> run_plugin -> plugin_outer -> plugin_hot (in the plugin), busy MS ms
 *   signal MS      main -> spin_wait, interrupted by SIGALRM; its handler runs the busy loop:
 *                  hot <- on_alarm <- (libc's signal trampoline, __restore_rt) <- spin_wait <- main
 *   plt MS         main -> plt_loop, which calls cfi_inc() of libcfi_plt.so through the PLT in a
 *                  tight loop: a share of the samples lands in the PLT stub itself
 *   libc MS        main -> sort_loop -> qsort, whose comparator cmp_hot is busy: frames in libc
 *                  (no frame pointers, .eh_frame) between cmp_hot and sort_loop
 *   deep DEPTH MS  main -> recurse (DEPTH times, 512 bytes of locals each) -> hot: deeper than
 *                  any user stack copy, so every stack is cut
 *   entry N        main -> entry_loop -> probe_me, N calls (for a uprobe at probe_me's entry)
 *
 * Busy loops run until SIGPROF: an ITIMER_PROF of MS ms of the process's CPU time sets `stop`,
 * so the loops make no system call and no vDSO call. Every function below is noipa (not
 * inlined, not cloned under another name) and does something after each call (an empty asm
 * with a memory clobber), so every call stays a call, never a tail jump. Prints nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define USAGE                                                                                    \
    "chain_nofp chain MS | sleep N MS | hold N MS | dlopen MS | signal MS | plt MS | libc MS | " \
    "deep DEPTH MS | entry N"
#define KEEP() __asm__ volatile("" ::: "memory")
#define FN __attribute__((noipa))

static volatile sig_atomic_t stop, alarmed;
volatile unsigned long sink;

long cfi_inc(long x); /* libcfi_plt.so */

static void on_prof(int sig) {
    (void)sig;
    stop = 1;
}

/* SIGPROF after ms of CPU time (user and system) of the whole process. */
static void stop_after(long ms) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    if (ms == 0) it.it_value.tv_usec = 1;
    setitimer(ITIMER_PROF, &it, NULL);
}

FN void hot(long unused) {
    (void)unused;
    while (!stop)
        for (unsigned long i = 0; i < 100000; i++) sink += i ^ (sink >> 3);
}

static long nap_ms;

FN void nap(long n) {
    struct timespec ts = {nap_ms / 1000, (nap_ms % 1000) * 1000000L};
    for (long i = 0; i < n; i++) {
        nanosleep(&ts, NULL);
        KEEP();
    }
}

FN void hold_fds(long n) {
    for (long i = 0; i < n; i++)
        if (eventfd(0, EFD_CLOEXEC) < 0) {
            perror("chain_nofp: eventfd");
            exit(1);
        }
    printf("held\n");
    fflush(stdout);
    nap(1);
    KEEP();
}

FN void b(void (*leaf)(long), long arg) {
    leaf(arg);
    KEEP();
}

FN void a(void (*leaf)(long), long arg) {
    volatile char pad[2048];
    pad[0] = 1;
    b(leaf, arg);
    pad[1] = pad[0];
}

FN void run_plugin(void (*outer)(volatile sig_atomic_t*)) {
    outer(&stop);
    KEEP();
}

static void on_alarm(int sig) {
    (void)sig;
    alarmed = 1;
    hot(0);
    KEEP();
}

/* Spins until the handler has run: the signal interrupts it at whatever instruction. */
FN void spin_wait(void) {
    while (!alarmed) sink++;
}

FN void plt_loop(void) {
    long x = 0;
    while (!stop) x = cfi_inc(x);
    sink = x;
}

FN int cmp_hot(const void* pa, const void* pb) {
    unsigned long x = *(const unsigned long*)pa, y = *(const unsigned long*)pb, h = 0;
    for (int i = 0; i < 200; i++) h += (x ^ i) * (y | 1);  // some work per comparison
    sink += h;
    return x < y ? -1 : x > y;
}

FN void sort_loop(void) {
    enum { N = 4096 };
    static unsigned long v[N];
    unsigned long seed = 88172645463325252ul;
    while (!stop) {
        for (int i = 0; i < N; i++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;  // xorshift64
            v[i] = seed;
        }
        qsort(v, N, sizeof v[0], cmp_hot);
        KEEP();
    }
}

FN void recurse(long depth) {
    volatile char locals[512];
    locals[0] = (char)depth;
    if (depth > 1)
        recurse(depth - 1);
    else
        hot(0);
    locals[1] = locals[0];
}

FN void probe_me(long i) {
    sink += i;
}

FN void entry_loop(long n) {
    for (long i = 0; i < n; i++) {
        probe_me(i);
        KEEP();
    }
}

/* The plugin beside this binary (the e2e tests run the binary from the build directory). */
static void* open_plugin(void) {
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0) return NULL;
    path[n] = 0;
    char* slash = strrchr(path, '/');
    strcpy(slash + 1, "libcfi_plugin.so");
    return dlopen(path, RTLD_NOW);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s\n", USAGE);
        return 2;
    }
    const char* mode = argv[1];
    const long n = parse_num(argv[2], USAGE);
    if (argc == 4) {
        const long ms = parse_num(argv[3], USAGE);
        nap_ms = ms;
        if (!strcmp(mode, "sleep")) {
            a(nap, n);
        } else if (!strcmp(mode, "hold")) {
            a(hold_fds, n);
        } else if (!strcmp(mode, "deep") && n >= 1) {
            stop_after(ms);
            recurse(n);
        } else {
            fprintf(stderr, "usage: %s\n", USAGE);
            return 2;
        }
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s\n", USAGE);
        return 2;
    }
    if (!strcmp(mode, "entry")) {
        entry_loop(n);
        return 0;
    }
    if (!strcmp(mode, "dlopen")) {
        void* h = open_plugin();
        void* outer = h ? dlsym(h, "plugin_outer") : NULL;
        if (!outer) {
            fprintf(stderr, "chain_nofp: %s\n", dlerror());
            return 1;
        }
        stop_after(n);
        run_plugin((void (*)(volatile sig_atomic_t*))outer);
        return 0;
    }
    stop_after(n);
    if (!strcmp(mode, "chain")) {
        a(hot, 0);
    } else if (!strcmp(mode, "signal")) {
        signal(SIGALRM, on_alarm);
        struct itimerval it = {{0, 0}, {0, 1000}};
        setitimer(ITIMER_REAL, &it, NULL);
        spin_wait();
    } else if (!strcmp(mode, "plt")) {
        plt_loop();
    } else if (!strcmp(mode, "libc")) {
        sort_loop();
    } else {
        fprintf(stderr, "usage: %s\n", USAGE);
        return 2;
    }
    KEEP();
    return 0;
}
