// Heap agent workload: a position-dependent executable (-no-pie) that takes malloc's address.
// Its PLT entry for malloc is then malloc's canonical address, which dlsym(RTLD_DEFAULT) returns
// instead of the preloaded definition. Leaks `n` blocks of 33 bytes through a direct call and
// as many through the pointer. Output: write(2) only.
//   heap_nopie [n]
#include <stdlib.h>
#include <unistd.h>

void* volatile sink;
void* (*volatile taken)(size_t);

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    taken = malloc;  // an absolute address in code: the PLT entry becomes canonical
    for (int i = 0; i < n; i++) sink = malloc(33);
    for (int i = 0; i < n; i++) sink = taken(33);
    sink = NULL;
    static const char done[] = "heap_nopie done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
