// A library heap_inject dlopens after the heap agent attached: its calls to malloc go through
// its own GOT, which the agent patches when dlopen returns.
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void* heap_dl_alloc(size_t n) {
    void* p = malloc(n);
    if (p) memset(p, 0x5a, n);
    return p;
}
