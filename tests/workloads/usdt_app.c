// USDT (SystemTap SDT) probes with known providers, names and argument kinds, each fired an
// exact number of times:
//   usdt_app N
// ppapp:start   once, no arguments
// ppapp:tick    N times, arguments: i (a long) and a pointer
// ppapp:value   N times, arguments: an int (i * 3), a signed char (-1), an unsigned short (7)
//               and an int on the stack (i * 6)
// ppapp:sem     N times, but only while a tracer holds its semaphore (in section .probes)
// ppapp:done    once, argument: N
// ppodd:konst   once, arguments: the constant 5 (an operand "$5", which has no uprobe form), N
#include <stdlib.h>
#include <sys/sdt.h>

volatile long sink;

__attribute__((noinline)) static void tick(long i, volatile long* p) {
    DTRACE_PROBE2(ppapp, tick, i, p);
    *p += i;
}

__attribute__((noinline)) static void value(int v, signed char c, unsigned short u) {
    volatile int twice = v * 2;  // a memory operand: an offset from the frame pointer
    DTRACE_PROBE4(ppapp, value, v, c, u, twice);
    sink += v + c + u;
}

// Only this probe has a semaphore: sdt.h decides per translation unit (_SDT_HAS_SEMAPHORES),
// so its two semaphore macros are switched on here, after the other probes.
unsigned short ppapp_sem_semaphore __attribute__((section(".probes"))) __attribute__((used));
#undef _SDT_SEMAPHORE
#define _SDT_SEMAPHORE(p, n) _SDT_ASM_1(_SDT_ASM_ADDR p##_##n##_semaphore)
#undef _SDT_NOTE_SEMAPHORE_USE
#define _SDT_NOTE_SEMAPHORE_USE(provider, name) __asm__ __volatile__("" ::"m"(provider##_##name##_semaphore));

__attribute__((noinline)) static void sem(long i) {
    if (__builtin_expect(ppapp_sem_semaphore, 0)) DTRACE_PROBE1(ppapp, sem, i);
}

#undef _SDT_SEMAPHORE
#define _SDT_SEMAPHORE(p, n) _SDT_ASM_1(_SDT_ASM_ADDR 0)
#undef _SDT_NOTE_SEMAPHORE_USE
#define _SDT_NOTE_SEMAPHORE_USE(provider, name)

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 10;
    DTRACE_PROBE(ppapp, start);
    for (long i = 0; i < n; i++) {
        tick(i, &sink);
        value((int)(i * 3), -1, 7);
        sem(i);
    }
    DTRACE_PROBE1(ppapp, done, n);
    DTRACE_PROBE2(ppodd, konst, 5, n);
    return 0;
}
