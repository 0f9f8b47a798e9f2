/*
 * libcfi_fponly.so: dlopen'd by tests/unit/heap_agent_unwind_test.cpp. Linked without an
 * .eh_frame_hdr (-Wl,--no-eh-frame-hdr), built with frame pointers: the heap agent's walker
 * follows its frames by the rbp chain. fp_outer(f, arg) -> fp_inner(f, arg) -> f(arg).
 */
typedef int (*cb_fn)(void*);

__attribute__((noipa)) int fp_inner(cb_fn f, void* arg) {
    volatile char pad[40];
    pad[0] = 1;
    const int r = f(arg);
    return r + pad[0];
}

__attribute__((noipa)) int fp_outer(cb_fn f, void* arg) {
    volatile char pad[24];
    pad[0] = 2;
    const int r = fp_inner(f, arg);
    return r + pad[0];
}
