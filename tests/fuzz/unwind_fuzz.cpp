// libFuzzer target for lib/unwind: arbitrary bytes as call-frame information (CfiTable::build and
// lookups, which compile the FDE programs they land in), and as a sample's registers and stack
// copy unwound through libc's real table or through the fuzzed table itself (its expressions run
// on the unwinder's stack machine).
//
// The first byte picks what the rest is:
//   0, 1   one .eh_frame (0) or .debug_frame (1) section at a fuzzed address: every FDE's first,
//          second, middle and last address, and around them, are looked up
//   2      two sections (.eh_frame then .debug_frame, split at a fuzzed offset): the priority rule
//   3      17 registers, a control word (valid registers, max) and a stack copy, unwound over
//          libc's .eh_frame mapped at address 0 (the pc in libc)
//   4      a section, then 17 registers and a stack copy unwound over that section's table
// Invariants: find() returns a row at or below the pc with its rules' registers < kRegs; unwind()
// writes at most `max` entries (a canary follows them), counts its frames, never reads outside
// the copy (the copy is an exact heap buffer: ASan sees a byte past it).
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "perf-prof/sample.h"
#include "unwind/cfi_table.h"
#include "unwind/unwinder.h"
#include "tests/fuzz/fuzz_input.h"

using namespace perfprof::unwind;

namespace {

[[noreturn]] void broken(const char* what) {
    fuzz::broken("unwind_fuzz", what);
}

using fuzz::take;

void check_row(CfiTable& t, uint64_t pc) {
    const Row* r = t.find(pc);
    if (!r) return;
    if (r->pc > pc) broken("row after pc");
    for (const RegRule& x : t.rules(*r))
        if (x.reg >= kRegs) broken("rule for an untracked register");
    if (r->cfa_kind == CfaKind::Expression) (void)t.expression(r->cfa_offset).size();
}

void lookups(CfiTable& t) {
    (void)t.memory_bytes();
    size_t k = 0;
    uint64_t prev = 0;
    for (const CfiTable::Range& f : t.ranges()) {
        if (f.begin >= f.end || f.begin < prev) broken("FDE ranges out of order");
        prev = f.end;
        if (++k > 64) break;  // enough: the programs are what is fuzzed
        for (uint64_t pc :
             {f.begin - 1, f.begin, f.begin + 1, f.begin + (f.end - f.begin) / 2, f.end - 1, f.end})
            check_row(t, pc);
    }
    for (uint64_t pc : {uint64_t(0), uint64_t(1), ~uint64_t(0)}) check_row(t, pc);
}

// One table mapped with its address 0 at `base`.
class Space final : public AddressSpace {
public:
    Space(CfiTable* t, uint64_t base) : t_(t), base_(base) {}
    bool find(uint64_t pc, CfiTable** table, uint64_t* obj_pc) override {
        if (!t_ || pc < base_ || pc - base_ >= (uint64_t(1) << 32)) return false;
        *table = t_;
        *obj_pc = pc - base_;
        return true;
    }

private:
    CfiTable* t_;
    uint64_t base_;
};

// Unwinds over `t` mapped at address 0, the pc taken modulo `pc_span` when it is not 0 (libc's
// text: small values on the stack are then its return addresses too).
void run_unwind(CfiTable* t, uint64_t pc_span, const uint8_t* p, size_t n) {
    UserState st;
    for (uint64_t& r : st.regs) r = take(p, n, 8);
    if (pc_span) st.regs[kRa] %= pc_span;
    if (st.regs[kRa] >= uint64_t(PERF_CONTEXT_MAX)) st.regs[kRa] &= 0x7fffffffffff;
    const uint64_t ctl = take(p, n, 4);
    st.valid = (ctl & 1) ? uint32_t(ctl >> 1) : (1u << kRegs) - 1;
    const size_t max = 1 + (ctl >> 24) % 130;
    // An exact copy of the rest: ASan reports a read of one byte past it.
    std::unique_ptr<uint8_t[]> copy(new uint8_t[n ? n : 1]);
    if (n) std::memcpy(copy.get(), p, n);
    st.stack = copy.get();
    st.stack_size = n;
    std::vector<uint64_t> out(max + 1, 0x5a5a5a5a5a5a5a5aull);
    Space space(t, 0);
    UnwindStats stats;
    const size_t got = unwind(space, st, out.data(), max, &stats);
    if (got > max) broken("more entries than max");
    if (out[max] != 0x5a5a5a5a5a5a5a5aull) broken("wrote past max");
    // Every entry a frame (no value a context marker takes: PERF_CONTEXT_*, kChainTruncated), but
    // for a last kChainTruncated. A pc in that range is no user address: the fuzzer keeps its
    // sampled pc below it, as the kernel's would be.
    for (size_t i = 0; i < got; i++)
        if (out[i] >= uint64_t(PERF_CONTEXT_MAX) && !(i + 1 == got && out[i] == perfprof::kChainTruncated))
            broken("a return address reads as a context marker");
    if (stats.frames != got - (got && out[got - 1] == perfprof::kChainTruncated)) broken("frames miscounted");
}

// libc's .eh_frame, read once with libelf (the fuzzer links no symbol code).
CfiTable* libc_table() {
    static CfiTable* table = [] {
        auto* t = new CfiTable;
        elf_version(EV_CURRENT);
        for (const char* path :
             {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"}) {
            const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
            size_t shstrndx = 0;
            if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
                for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
                    GElf_Shdr sh;
                    const char* name =
                        gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
                    if (!name || std::strcmp(name, ".eh_frame") != 0 || sh.sh_type == SHT_NOBITS) continue;
                    if (Elf_Data* d = elf_getdata(scn, nullptr); d && d->d_buf) {
                        const FrameSection s{FrameSection::EhFrame, static_cast<const uint8_t*>(d->d_buf),
                                             d->d_size, sh.sh_addr};
                        *t = CfiTable::build({&s, 1});  // the bytes are copied
                    }
                }
            }
            if (elf) elf_end(elf);
            ::close(fd);
            if (!t->empty()) break;
        }
        return t;
    }();
    return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t mode = data[0] % 5;
    const uint8_t* p = data + 1;
    size_t n = size - 1;
    switch (mode) {
        case 0:
        case 1:
        case 2: {
            const uint64_t addr = take(p, n, 4) << 4;
            // An exact copy: the section is read in place by build().
            std::unique_ptr<uint8_t[]> bytes(new uint8_t[n ? n : 1]);
            if (n) std::memcpy(bytes.get(), p, n);
            const size_t split = mode == 2 && n ? data[0] / 5 * n / 52 : n;
            const FrameSection secs[] = {
                {mode == 1 ? FrameSection::DebugFrame : FrameSection::EhFrame, bytes.get(), split, addr},
                {FrameSection::DebugFrame, bytes.get() + split, n - split, 0}};
            CfiTable t = CfiTable::build({secs, mode == 2 ? 2u : 1u});
            lookups(t);
            break;
        }
        case 3: {
            CfiTable* libc = libc_table();
            if (libc->empty()) return 0;
            run_unwind(libc, libc->ranges().back().end, p, n);
            break;
        }
        case 4: {
            const size_t len = n ? take(p, n, 2) % (n + 1) : 0;
            std::unique_ptr<uint8_t[]> bytes(new uint8_t[len ? len : 1]);
            if (len) std::memcpy(bytes.get(), p, len);
            const FrameSection s{FrameSection::EhFrame, bytes.get(), len, 0x1000};
            CfiTable t = CfiTable::build({&s, 1});
            run_unwind(&t, 0, p + len, n - len);
            break;
        }
    }
    return 0;
}
