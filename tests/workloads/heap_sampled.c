// Heap agent workload for sampled profiles: keeps `mib` MiB live through keep_live(), in blocks
// of 64 + (i * 977) % 16000 bytes (i = 0, 1, ...: the last block ends at or past `mib` MiB), and
// allocates and frees as much again through churn(). A sampled profile scaled back must show the
// live bytes within its sampling error. Output: write(2) only.
//   heap_sampled [mib]
#include <stdlib.h>
#include <unistd.h>

void* live[1 << 20];  // global: the blocks stay reachable, and the calls are kept
void* volatile sink;

static size_t block_size(size_t i) {
    return 64 + (i * 977) % 16000;
}

__attribute__((noinline)) static size_t keep_live(size_t bytes) {
    size_t n = 0, total = 0;
    while (total < bytes && n < sizeof live / sizeof *live) {
        live[n] = malloc(block_size(n));
        total += block_size(n++);
    }
    return n;
}

__attribute__((noinline)) static void churn(size_t n) {
    for (size_t i = 0; i < n; i++) {
        void* p = malloc(block_size(i));
        sink = p;
        free(p);
    }
}

int main(int argc, char** argv) {
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
    size_t n = keep_live(mib << 20);
    churn(n);
    static const char done[] = "heap_sampled done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
