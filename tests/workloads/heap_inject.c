// Heap agent workload for inject mode without a debugger: the process loads the agent itself as
// the injector makes a target do (dlopen RTLD_NOW | RTLD_LOCAL, then perfprof_heap_attach), so
// that the GOT patching is tested on its own. Between attach and detach it leaks `n` blocks of
// 56 bytes through malloc, 2 through strdup (libc's own call to malloc, through libc's GOT), and
// `n` blocks of 88 bytes from libheap_dl.so, dlopen'd after the attach (patched when dlopen
// returns) and dlclose'd; it also takes malloc's address while patched. Allocations before
// the attach and after the detach are not recorded; the address taken still works after it.
//   heap_inject AGENT CHANNEL [n]
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
    leak(n, 32);  // before: not recorded
    void* agent = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!agent) return fail("dlopen agent");
    int (*attach)(const char*) = (int (*)(const char*))dlsym(agent, "perfprof_heap_attach");
    int (*detach)(void) = (int (*)(void))dlsym(agent, "perfprof_heap_detach");
    if (!attach || !detach) return fail("dlsym");
    if (attach(argv[2]) != 0) return fail("perfprof_heap_attach");
    void* (*volatile taken)(size_t) = malloc;  // the hook's address, through the patched GOT
    leak(n, 56);
    sink = strdup("perf-prof heap agent");
    sink = strdup("inject");
    char lib[4096];
    snprintf(lib, sizeof lib, "%s", argv[0]);
    char* slash = strrchr(lib, '/');
    snprintf(slash ? slash + 1 : lib, sizeof lib - (size_t)(slash ? slash + 1 - lib : 0), "libheap_dl.so");
    void* h = dlopen(lib, RTLD_NOW);
    if (!h) return fail("dlopen libheap_dl.so");
    void* (*dl_alloc)(size_t) = (void* (*)(size_t))dlsym(h, "heap_dl_alloc");
    if (!dl_alloc) return fail("dlsym heap_dl_alloc");
    for (int i = 0; i < n; i++) sink = dl_alloc(88);
    sink = NULL;
    dlclose(h);
    if (detach() != 0) return 1;
    leak(n, 120);  // after: not recorded
    free(taken(16));  // a hook's address taken while patched still allocates after the detach
    static const char done[] = "heap_inject done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
