/* jitmap FIRST_MS SECOND_MS [CALLS]: a tiny JIT. Writes spinning functions as raw x86-64 code
 * into anonymous executable memory and names them the way JIT compilers do, in
 * /tmp/perf-PID.map: jit_spin_loop first, spun in for FIRST_MS of CPU time; then the map grows by a second
 * line, jit_second_loop, spun in for SECOND_MS; then by a third, jit_getppid, a function that
 * makes the getppid system call, called CALLS times (default 0), and by a fourth, its copy
 * jit_getppid_again, called CALLS times more. Prints "jit PID" first. The
 * map file is left behind, as JITs leave it (the test removes it). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "workload.h"

/* push rbp; mov rbp,rsp; mov rax,rdi; 1: dec rax; jnz 1b; pop rbp; ret -- a frame of its own,
 * so that a frame-pointer unwinder goes on to main. */
static const unsigned char kSpin[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8,
                                      0x48, 0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3};

/* push rbp; mov rbp,rsp; mov eax,110 (getppid); syscall; pop rbp; ret */
static const unsigned char kGetppid[] = {0x55, 0x48, 0x89, 0xe5, 0xb8, 0x6e, 0x00,
                                         0x00, 0x00, 0x0f, 0x05, 0x5d, 0xc3};

typedef uint64_t (*spin_fn)(uint64_t);

/* CPU time, not wall time: the samples a function gets do not depend on the machine's load. */
static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void name_it(const char* map, const void* code, size_t size, const char* name) {
    FILE* f = fopen(map, "a");
    if (!f) {
        perror(map);
        exit(1);
    }
    fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)code, size, name);
    fclose(f);
}

static void __attribute__((noinline)) spin_for(spin_fn fn, long ms) {
    const uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) fn(200000);
}

int main(int argc, char** argv) {
    const char* usage = "jitmap FIRST_MS SECOND_MS [CALLS]";
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    const long first = parse_num(argv[1], usage), second = parse_num(argv[2], usage);
    const long calls = argc == 4 ? parse_num(argv[3], usage) : 0;
    unsigned char* code = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    /* The second function one page further, in the same anonymous mapping. */
    memcpy(code, kSpin, sizeof kSpin);
    memcpy(code + 4096, kSpin, sizeof kSpin);
    memcpy(code + 6144, kGetppid, sizeof kGetppid);
    memcpy(code + 7168, kGetppid, sizeof kGetppid);
    if (mprotect(code, 8192, PROT_READ | PROT_EXEC) != 0) {
        perror("mprotect");
        return 1;
    }
    char map[64];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
    unlink(map); /* a map left by an earlier process of the same pid */
    printf("jit %d\n", (int)getpid());
    fflush(stdout);
    name_it(map, code, sizeof kSpin, "jit_spin_loop");
    spin_for((spin_fn)(uintptr_t)code, first);
    name_it(map, code + 4096, sizeof kSpin, "jit_second_loop");
    spin_for((spin_fn)(uintptr_t)(code + 4096), second);
    name_it(map, code + 6144, sizeof kGetppid, "jit_getppid");
    for (long i = 0; i < calls; i++) ((spin_fn)(uintptr_t)(code + 6144))(0);
    /* The map grows once more while a tracer may have read it already. */
    name_it(map, code + 7168, sizeof kGetppid, "jit_getppid_again");
    for (long i = 0; i < calls; i++) ((spin_fn)(uintptr_t)(code + 7168))(0);
    return 0;
}
