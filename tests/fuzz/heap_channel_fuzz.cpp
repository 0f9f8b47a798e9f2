// libFuzzer target: arbitrary bytes as the heap agent's channel mapping (lib/heap/agent/wire.h),
// as a hostile or broken target could leave it: the layout check, every stack id around the
// table, the error line, and draining the ring. Nothing may read outside the mapping.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "heap/agent_channel.h"
#include "perf-prof/error.h"

// The input: the header's bytes (sizeof(pph_header), zero-padded when shorter), then what
// follows the header page. The mapping is the page with that header, then the rest, so that a
// short input can still lay out a ring, a stack table and a pool.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace perfprof::heap;
    if (size > (1u << 20)) return 0;
    const size_t head = std::min(size, sizeof(pph_header));
    const size_t bytes = (PPH_HEADER_SIZE + (size - head)) & ~size_t(7);
    // Exactly `bytes` (8-aligned; page-aligned in reality): ASan sees any read past them.
    std::vector<uint64_t> words(bytes / 8);
    auto* mem = reinterpret_cast<uint8_t*>(words.data());
    if (head) std::memcpy(mem, data, head);
    if (size > head) std::memcpy(mem + PPH_HEADER_SIZE, data + head, bytes - PPH_HEADER_SIZE);
    try {
        AgentChannel ch(words.data(), bytes);
        (void)ch.error().size();
        (void)ch.state();
        const pph_header* h = ch.header();
        uint64_t sum = 0;
        for (uint32_t id :
             {0u, 1u, 2u, 0x7fffffffu, 0xffffffffu, uint32_t(h->stack_slots), uint32_t(h->stack_slots + 1)})
            for (uint64_t a : ch.stack(id)) sum += a;
        for (uint32_t id = 1; id <= 64; id++)
            for (uint64_t a : ch.stack(id)) sum += a;
        ch.drain([&](const pph_rec& r) {
            sum += r.ptr + r.size;
            for (uint64_t a : ch.stack(r.stack)) sum += a;
        });
        (void)sum;
    } catch (const perfprof::Error&) {
    }
    return 0;
}
