// libFuzzer target: arbitrary bytes as the heap agent's channel mapping (lib/heap/agent/wire.h),
// as a hostile or broken target could leave it: the layout check, every stack id around the
// table, the error line, and draining the ring. Nothing may read outside the mapping.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "heap/agent_channel.h"
#include "perf-prof/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace perfprof::heap;
    if (size > (1u << 20)) return 0;
    // The mapping: page-aligned in reality, 8-aligned here, exactly `size` bytes (ASan sees any
    // read past them).
    std::vector<uint64_t> words((size + 7) / 8);
    if (size) std::memcpy(words.data(), data, size);
    const size_t bytes = size & ~size_t(7);
    try {
        AgentChannel ch(words.data(), bytes);
        (void)ch.error().size();
        (void)ch.state();
        const pph_header* h = ch.header();
        uint64_t sum = 0;
        for (uint32_t id : {0u, 1u, 2u, 0x7fffffffu, 0xffffffffu, uint32_t(h->stack_slots),
                            uint32_t(h->stack_slots + 1)})
            for (uint64_t a : ch.stack(id)) sum += a;
        for (uint32_t id = 1; id <= 64; id++)
            for (uint64_t a : ch.stack(id)) sum += a;
        size_t n = ch.drain([&](const pph_rec& r) {
            sum += r.ptr + r.size;
            for (uint64_t a : ch.stack(r.stack)) sum += a;
        });
        (void)n;
        (void)sum;
    } catch (const perfprof::Error&) {
    }
    return 0;
}
