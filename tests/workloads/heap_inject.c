// Heap agent workload for inject mode without a debugger: the process loads the agent itself as
// the injector makes a target do (dlopen RTLD_NOW | RTLD_LOCAL, then perfprof_heap_attach), so
// that the GOT patching is tested on its own. Between attach and detach it leaks `n` blocks of
// 3056 bytes through malloc, 2 through strdup (3001 and 3002 bytes: libc's own call to malloc,
// through libc's GOT), and `n` blocks of 3088 bytes from libheap_dl.so, dlopen'd after the attach (patched
// when dlopen returns; by its name, found through this program's RUNPATH $ORIGIN) and dlclose'd; it also
// takes malloc's address while patched. Allocations before the attach and after the detach are not recorded;
// the address taken still works after it. With CHANNEL2 it attaches again after the detach (a second session,
// as serve does on demand) and leaks `n` blocks of 3099 bytes there.
//   heap_inject AGENT CHANNEL [n [CHANNEL2]]
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void* volatile sink;

__attribute__((noinline)) static void leak(int n, size_t size) {
    for (int i = 0; i < n; i++) sink = malloc(size);
    sink = NULL;
}

static int fail(const char* what) {
    const char* e = dlerror();
    fprintf(stderr, "heap_inject: %s: %s\n", what, e ? e : "failed");
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    int n = argc > 3 ? atoi(argv[3]) : 5;
    leak(n, 3032);  // before: not recorded
    void* agent = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!agent) return fail("dlopen agent");
    int (*attach)(const char*) = (int (*)(const char*))dlsym(agent, "perfprof_heap_attach");
    int (*detach)(void) = (int (*)(void))dlsym(agent, "perfprof_heap_detach");
    if (!attach || !detach) return fail("dlsym");
    if (attach(argv[2]) != 0) return fail("perfprof_heap_attach");
    void* (*volatile taken)(size_t) = malloc;  // the hook's address, through the patched GOT
    leak(n, 3056);
    static char text[3002];
    memset(text, 'x', sizeof text - 1);
    sink = strdup(text);
    text[3000] = 0;
    sink = strdup(text);
    // By name: found along this program's RUNPATH ($ORIGIN), which the agent's dlopen hook
    // searches on the program's behalf.
    void* h = dlopen("libheap_dl.so", RTLD_NOW);
    if (!h) return fail("dlopen libheap_dl.so");
    void* (*dl_alloc)(size_t) = (void* (*)(size_t))dlsym(h, "heap_dl_alloc");
    if (!dl_alloc) return fail("dlsym heap_dl_alloc");
    for (int i = 0; i < n; i++) sink = dl_alloc(3088);
    sink = NULL;
    dlclose(h);
    if (detach() != 0) return 1;
    leak(n, 3120);      // after: not recorded
    free(taken(3016));  // a hook's address taken while patched still allocates after the detach
    if (argc > 4) {
        if (attach(argv[4]) != 0) return fail("perfprof_heap_attach again");
        leak(n, 3099);
        if (detach() != 0) return 1;
    }
    static const char done[] = "heap_inject done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
