/*
 * libcfi_plugin.so: dlopen'd by `chain_nofp dlopen MS` after it starts (so its mapping is only
 * known from the mmap record that dlopen causes). Built -O2 -fomit-frame-pointer -fPIC.
 * plugin_outer(stop) -> plugin_hot(stop), busy until *stop.
 */
#include <signal.h>

volatile unsigned long plugin_sink;

__attribute__((noipa)) void plugin_hot(volatile sig_atomic_t* stop) {
    while (!*stop)
        for (unsigned long i = 0; i < 100000; i++) plugin_sink += i ^ (plugin_sink >> 3);
}

__attribute__((noipa)) void plugin_outer(volatile sig_atomic_t* stop) {
    plugin_hot(stop);
    __asm__ volatile("" ::: "memory");
}
