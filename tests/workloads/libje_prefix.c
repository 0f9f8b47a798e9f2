// An allocator's prefixed entry points (as jemalloc built with --with-jemalloc-prefix=je_
// exports them), over libc's: what je_user calls instead of malloc.
#include <stdlib.h>

void* je_malloc(size_t n) {
    return malloc(n);
}

void je_free(void* p) {
    free(p);
}
