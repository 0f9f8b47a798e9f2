/*
 * libcfi_callback.so: dlopen'd by the heap agent walker's tests and bench
 * (tests/unit/heap_agent_unwind_test.cpp, bench/agent_unwind_bench.c), which unwind from a
 * callback back through it. Built -O2 -fomit-frame-pointer -fPIC: only its CFI describes its
 * frames. Each function keeps a frame of its own (a local array), so the CFA moves.
 * cb_outer(f, arg) -> cb_inner(f, arg) -> f(arg); cb_chain(depth, f, arg): depth frames, then f.
 */
typedef int (*cb_fn)(void*);

__attribute__((noipa)) int cb_inner(cb_fn f, void* arg) {
    volatile char pad[40];
    pad[0] = 1;
    const int r = f(arg);
    return r + pad[0];
}

__attribute__((noipa)) int cb_outer(cb_fn f, void* arg) {
    volatile char pad[24];
    pad[0] = 2;
    const int r = cb_inner(f, arg);
    return r + pad[0];
}

__attribute__((noipa)) int cb_chain(int depth, cb_fn f, void* arg) {
    volatile char pad[16];
    pad[0] = (char)depth;
    const int r = depth <= 1 ? f(arg) : cb_chain(depth - 1, f, arg);
    return r + pad[0];
}
