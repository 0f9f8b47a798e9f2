// Heap agent workload in C++: operator new/delete in every form a program calls (plain, array,
// nothrow, aligned, sized delete), and an allocation that fails with std::bad_alloc thrown
// through the allocator's entry point and caught. Leaks exactly `leaks` objects of 72 bytes
// through new (leak_cxx_new) and frees everything else: per round 6 allocations and 6 deletes.
// After the exception it allocates once more, so a profiler that lost its footing on the throw
// shows it. Output: one line on stdout, write(2).
//   heap_cxx [rounds leaks]
#include <unistd.h>

#include <cstdlib>
#include <new>

struct Obj {
    char pad[72];
};
struct alignas(64) Wide {
    char pad[128];
};

void* volatile sink;  // every block escapes: the compiler may elide a new/delete pair otherwise

__attribute__((noinline)) Obj* leak_cxx_new() {
    return new Obj;
}

__attribute__((noinline)) void churn(int rounds) {
    for (int r = 0; r < rounds; r++) {
        Obj* a = new Obj;
        Obj* b = new Obj[3];
        Obj* c = new (std::nothrow) Obj;
        Wide* d = new Wide;  // aligned new (alignas 64 > __STDCPP_DEFAULT_NEW_ALIGNMENT__ is 16)
        Wide* e = new Wide[2];
        char* f = new (std::nothrow) char[200];
        sink = a;
        sink = b;
        sink = c;
        sink = d;
        sink = e;
        sink = f;
        delete a;  // sized delete (C++14)
        delete[] b;
        delete c;
        delete d;  // aligned sized delete
        delete[] e;
        delete[] f;
    }
}

// Asks for more than any allocator gives: std::bad_alloc through the hooks.
__attribute__((noinline)) int huge_fails() {
    try {
        volatile size_t n = size_t(1) << 62;
        char* p = new char[n];
        sink = p;
        return 0;
    } catch (const std::bad_alloc&) {
        return 1;
    }
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
    int leaks = argc > 2 ? std::atoi(argv[2]) : 3;
    churn(rounds);
    if (!huge_fails()) return 2;
    for (int i = 0; i < leaks; i++) sink = leak_cxx_new();
    sink = nullptr;
    churn(rounds);
    static const char done[] = "heap_cxx done\n";
    if (write(1, done, sizeof done - 1) < 0) return 1;
    return 0;
}
