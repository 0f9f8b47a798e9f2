// A program with an allocator of its own: it defines malloc, calloc, realloc and free (a bump
// allocator over a static arena), so that its calls to them never reach libc's or a preloaded
// one's (the heap agent cannot interpose them). Waits on stdin, then exits.
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static char arena[1 << 20] __attribute__((aligned(16)));
static size_t used;

void* malloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof arena - used) return NULL;
    void* p = arena + used;
    used += n;
    return p;
}

void* calloc(size_t n, size_t size) {
    void* p = malloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void* realloc(void* old, size_t n) {
    void* p = malloc(n);
    if (p && old) memcpy(p, old, n);  // the arena is big enough to read past a smaller block
    return p;
}

void free(void* p) {
    (void)p;
}

void* volatile sink;

int main(void) {
    sink = malloc(100);
    char c;
    return read(0, &c, 1) < 0;
}
