// A program that allocates through an allocator's prefixed entry points (je_malloc, from
// libje_prefix.so beside it): interposing malloc does not catch its allocations. Waits on
// stdin, then exits.
#include <stddef.h>
#include <unistd.h>

void* je_malloc(size_t n);
void je_free(void* p);

int main(void) {
    void* p = je_malloc(100);
    char c;
    int r = read(0, &c, 1) < 0;
    je_free(p);
    return r;
}
