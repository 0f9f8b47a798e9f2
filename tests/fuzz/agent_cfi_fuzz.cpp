// libFuzzer target for lib/heap/agent/unwind_cfi (the heap agent walker's parser, plain C):
// arbitrary bytes as the segment an object's .eh_frame or .eh_frame_hdr lies in.
//
// Input: a mode byte, a pc (8 bytes), the segment's address (8 bytes), an offset (2 bytes),
// then the segment's bytes (an exact heap copy: ASan sees a byte past it).
//   mode even  the offset is an FDE's: its rule at pc, pc + 1, pc - 1
//   mode odd   the offset is an .eh_frame_hdr's: its table's binary search at pc, pc +- 1 and at
//              the first entries' addresses (each entry's FDE in the same segment)
// Invariants: an answer is one of PPH_CFI_*; a rule found has PPH_RULE_VALID and is not both
// "rbp saved" and "rbp lost".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "heap/agent/unwind_cfi.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

[[noreturn]] void broken(const char* what) {
    fuzz::broken("agent_cfi_fuzz", what);
}

using fuzz::take;

void check(int rc, const pph_rule& r) {
    if (rc < PPH_CFI_OK || rc > PPH_CFI_BAD) broken("an answer out of range");
    if (rc != PPH_CFI_OK) return;
    if (!(r.flags & PPH_RULE_VALID)) broken("a rule without PPH_RULE_VALID");
    if ((r.flags & PPH_RULE_RBP_SAVED) && (r.flags & PPH_RULE_RBP_LOST)) broken("rbp both saved and lost");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const uint8_t* p = data;
    size_t n = size;
    const uint8_t mode = uint8_t(take(p, n, 1));
    const uint64_t pc = take(p, n, 8), addr = take(p, n, 8), off = take(p, n, 2);
    std::unique_ptr<uint8_t[]> bytes(new uint8_t[n ? n : 1]);
    if (n) std::memcpy(bytes.get(), p, n);
    const pph_mem m{bytes.get(), addr, n};
    pph_rule r;
    if (!(mode & 1)) {
        for (uint64_t at : {pc, pc + 1, pc - 1}) check(pph_cfi_fde_rule(&m, addr + off, at, &r), r);
        return 0;
    }
    pph_cfi cfi;
    const int rc = pph_cfi_parse_hdr(&m, addr + off, &cfi);
    if (rc < PPH_CFI_OK || rc > PPH_CFI_BAD) broken("an answer out of range");
    if (rc != PPH_CFI_OK) return 0;
    if (cfi.table < addr || cfi.table - addr > n || uint64_t(cfi.fde_count) * 8 > n - (cfi.table - addr))
        broken("a table outside the segment");
    cfi.eh_seg = m;
    for (uint64_t at : {pc, pc + 1, pc - 1}) check(pph_cfi_find(&cfi, at, &r), r);
    for (uint32_t i = 0; i < cfi.fde_count && i < 8; i++) {
        int32_t loc;
        std::memcpy(&loc, bytes.get() + (cfi.table - addr) + 8 * uint64_t(i), 4);
        const uint64_t start = cfi.hdr + uint64_t(int64_t(loc));
        for (uint64_t at : {start, start + 1, start + 5}) check(pph_cfi_find(&cfi, at, &r), r);
    }
    return 0;
}
