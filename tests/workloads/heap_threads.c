// Heap agent workload: `threads` threads allocate at once. Each makes `rounds` malloc/free pairs
// (16..527 bytes) and leaks `leaks` blocks of 200 bytes; all are joined before exit. Totals:
// threads * (rounds + leaks) allocations, threads * rounds frees. Output: write(2) only.
//   heap_threads [threads rounds leaks]
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static int rounds = 20000, leaks = 3;
void* volatile sink;

__attribute__((noinline)) static void* worker(void* arg) {
    (void)arg;
    for (int i = 0; i < rounds; i++) {
        void* p = malloc(16 + (size_t)(i & 511));
        sink = p;
        free(p);
    }
    for (int i = 0; i < leaks; i++) sink = malloc(200);
    sink = NULL;
    return NULL;
}

int main(int argc, char** argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2) rounds = atoi(argv[2]);
    if (argc > 3) leaks = atoi(argv[3]);
    pthread_t t[64];
    if (threads > 64) threads = 64;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, NULL)) return 1;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    static const char done[] = "heap_threads done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
