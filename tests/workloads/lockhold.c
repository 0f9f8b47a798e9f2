/* Lock contention of known length for `perf-prof lock`: a holder thread takes a lock, keeps it
 * HOLD_MS, releases it and lets the waiter take it; the waiter blocks each time. Both measure
 * their own waits (clock_gettime around the blocking call) and print the totals at exit.
 *
 * usage: lockhold MODE [N] [HOLD_MS]
 *   mutex    a pthread mutex, N rounds (default 100, 5 ms)
 *   rwlock   the holder write-locks, the waiter read-locks
 *   condvar  the waiter waits on a condition variable the holder signals after HOLD_MS
 *   locks    three mutexes (their addresses printed), round r held on lock r % 3 and
 *            (r % 3 + 1) ms long
 *   exit     the holder keeps the mutex while the main thread exits the process: the waiter
 *            is still blocked (no total printed)
 *   storm    N threads (default 4) take and release one mutex for HOLD_MS ms (default 2000)
 *            of wall time, with OUTSIDE iterations of work between (argument 4, default 0);
 *            prints the lock operations made. With a 5th argument "wait", starts after a
 *            byte on stdin (a profiler attaches first: bench/lock_bench.py)
 *   handoff  as storm (N is ignored), but two threads pass a turn through a condition variable,
 *            OUTSIDE iterations of work per turn: one wake and one blocked wait a turn
 *
 * Lines: "lockhold: pid P", "lockhold: lock 0xADDR" (per lock), then at the end
 * "lockhold: waited NS ns in N waits" (the waiter's total, ns).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workload.h"

#define USAGE "lockhold mutex|rwlock|condvar|locks|exit|storm|handoff [N] [HOLD_MS] [OUTSIDE [wait]]"

static long rounds = 100, hold_ms = 5;
static pthread_mutex_t mutexes[3] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                     PTHREAD_MUTEX_INITIALIZER};
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cv_ready;
/* The waiter tells the holder it is about to block (turn = round + 1). */
static atomic_long turn;
static uint64_t waited_ns, waits;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* The holder keeps the lock while the waiter blocks on it; the waiter is parked first on the
 * `turn` counter so each round has exactly one contended wait. */
__attribute__((noinline)) void holder_release_mutex(pthread_mutex_t* m) {
    pthread_mutex_unlock(m);
}

__attribute__((noinline)) void waiter_lock_mutex(pthread_mutex_t* m) {
    const uint64_t t0 = now_ns();
    pthread_mutex_lock(m);
    waited_ns += now_ns() - t0;
    waits++;
}

__attribute__((noinline)) void holder_release_rwlock(void) {
    pthread_rwlock_unlock(&rw);
}

__attribute__((noinline)) void waiter_read_rwlock(void) {
    const uint64_t t0 = now_ns();
    pthread_rwlock_rdlock(&rw);
    waited_ns += now_ns() - t0;
    waits++;
}

__attribute__((noinline)) void holder_signal_condvar(void) {
    pthread_mutex_lock(&cv_mutex);
    cv_ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cv_mutex);
}

__attribute__((noinline)) void waiter_wait_condvar(void) {
    pthread_mutex_lock(&cv_mutex);
    const uint64_t t0 = now_ns();
    while (!cv_ready) pthread_cond_wait(&cv, &cv_mutex);
    waited_ns += now_ns() - t0;
    waits++;
    cv_ready = 0;
    pthread_mutex_unlock(&cv_mutex);
}

static const char* mode;

static pthread_mutex_t* lock_of(long r) {
    return strcmp(mode, "locks") == 0 ? &mutexes[r % 3] : &mutexes[0];
}
static long hold_of(long r) {
    return strcmp(mode, "locks") == 0 ? r % 3 + 1 : hold_ms;
}

/* Round r: the holder takes the lock (held = r + 1), waits until the waiter is about to block
 * (turn = r + 1), holds the lock, releases it, and waits until the waiter is done (done = r + 1).
 * Condvar: the holder signals after the waiter waits. One contended wait per round. */
static atomic_long held, done;

__attribute__((noinline)) static void* holder_thread(void* arg) {
    (void)arg;
    const int cond = strcmp(mode, "condvar") == 0, rwl = strcmp(mode, "rwlock") == 0;
    for (long r = 0; r < rounds; r++) {
        if (!cond) {
            if (rwl)
                pthread_rwlock_wrlock(&rw);
            else
                pthread_mutex_lock(lock_of(r));
        }
        atomic_store(&held, r + 1);
        while (atomic_load(&turn) <= r) sched_yield();
        sleep_ms(hold_of(r));
        if (cond)
            holder_signal_condvar();
        else if (rwl)
            holder_release_rwlock();
        else
            holder_release_mutex(lock_of(r));
        while (atomic_load(&done) <= r) sched_yield();
    }
    return NULL;
}

__attribute__((noinline)) static void* waiter_thread(void* arg) {
    (void)arg;
    const int cond = strcmp(mode, "condvar") == 0, rwl = strcmp(mode, "rwlock") == 0;
    for (long r = 0; r < rounds; r++) {
        while (atomic_load(&held) <= r) sched_yield();
        atomic_store(&turn, r + 1);
        if (cond) {
            waiter_wait_condvar();
        } else if (rwl) {
            waiter_read_rwlock();
            pthread_rwlock_unlock(&rw);
        } else {
            waiter_lock_mutex(lock_of(r));
            pthread_mutex_unlock(lock_of(r));
        }
        atomic_store(&done, r + 1);
    }
    return NULL;
}

static void* blocked_waiter(void* arg) {
    waiter_lock_mutex(arg);
    return NULL;
}

/* storm: every thread takes and releases the mutex as fast as it can. */
static atomic_int stop;
static atomic_long ops;
static long outside;
__attribute__((noinline)) void storm_critical(volatile long* counter) {
    pthread_mutex_lock(&mutexes[0]);
    for (int i = 0; i < 50; i++) (*counter)++;
    pthread_mutex_unlock(&mutexes[0]);
}

static void* stormer(void* arg) {
    (void)arg;
    volatile long counter = 0;
    long n = 0;
    while (!atomic_load(&stop)) {
        storm_critical(&counter);
        for (long i = 0; i < outside; i++) counter++;
        n++;
    }
    atomic_fetch_add(&ops, n);
    return NULL;
}

/* handoff: two threads pass a turn through a mutex and a condition variable, OUTSIDE
 * iterations of work per turn: every turn is one wake and one blocked wait. */
static long turns;
static int handoff_turn;
static void* handoffer(void* arg) {
    const int me = (int)(intptr_t)arg;
    volatile long counter = 0;
    for (;;) {
        pthread_mutex_lock(&cv_mutex);
        while (handoff_turn != me && !atomic_load(&stop)) pthread_cond_wait(&cv, &cv_mutex);
        if (atomic_load(&stop)) {
            pthread_cond_broadcast(&cv);
            pthread_mutex_unlock(&cv_mutex);
            return NULL;
        }
        handoff_turn = !me;
        turns++;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&cv_mutex);
        for (long i = 0; i < outside; i++) counter++;
    }
}

static int handoff(long ms) {
    pthread_t t[2];
    const uint64_t t0 = now_ns();
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, handoffer, (void*)(intptr_t)i);
    sleep_ms(ms);
    atomic_store(&stop, 1);
    pthread_mutex_lock(&cv_mutex);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&cv_mutex);
    for (long i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("lockhold: %ld ops in %llu ns\n", turns, (unsigned long long)(now_ns() - t0));
    return 0;
}

static int storm(long threads, long ms) {
    pthread_t t[64];
    if (threads < 1 || threads > 64) threads = 4;
    const uint64_t t0 = now_ns();
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, stormer, NULL);
    sleep_ms(ms);
    atomic_store(&stop, 1);
    for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("lockhold: %ld ops in %llu ns\n", atomic_load(&ops), (unsigned long long)(now_ns() - t0));
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s\n", USAGE);
        return 2;
    }
    mode = argv[1];
    const int is_storm = strcmp(mode, "storm") == 0 || strcmp(mode, "handoff") == 0;
    if (is_storm) rounds = 4, hold_ms = 2000;
    if (argc > 2) rounds = parse_num(argv[2], USAGE);
    if (argc > 3) hold_ms = parse_num(argv[3], USAGE);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("lockhold: pid %d\n", getpid());
    if (is_storm) {
        if (argc > 4) outside = parse_num(argv[4], USAGE);
        if (argc > 5) wait_stdin();
        return strcmp(mode, "handoff") == 0 ? handoff(hold_ms) : storm(rounds, hold_ms);
    }
    if (strcmp(mode, "exit") == 0) {
        pthread_t w;
        pthread_mutex_lock(&mutexes[0]);
        printf("lockhold: lock %p\n", (void*)&mutexes[0]);
        pthread_create(&w, NULL, blocked_waiter, &mutexes[0]);
        sleep_ms(hold_ms);
        printf("lockhold: exiting with the waiter blocked\n");
        exit(0);
    }
    if (strcmp(mode, "mutex") && strcmp(mode, "rwlock") && strcmp(mode, "condvar") && strcmp(mode, "locks")) {
        fprintf(stderr, "usage: %s\n", USAGE);
        return 2;
    }
    if (strcmp(mode, "locks") == 0)
        for (int i = 0; i < 3; i++) printf("lockhold: lock %p\n", (void*)&mutexes[i]);
    else if (strcmp(mode, "rwlock") == 0)
        printf("lockhold: lock %p\n", (void*)&rw);
    else if (strcmp(mode, "condvar") == 0)
        printf("lockhold: lock %p\n", (void*)&cv);
    else
        printf("lockhold: lock %p\n", (void*)&mutexes[0]);
    pthread_t h, w;
    pthread_create(&h, NULL, holder_thread, NULL);
    pthread_create(&w, NULL, waiter_thread, NULL);
    pthread_join(h, NULL);
    pthread_join(w, NULL);
    printf("lockhold: waited %llu ns in %llu waits\n", (unsigned long long)waited_ns, (unsigned long long)waits);
    return 0;
}
