// lib/unwind/unwinder: this process unwinding itself from a copy of its own registers and stack
// (as a PERF_SAMPLE_REGS_USER / STACK_USER sample carries them) through the CFI of the objects the
// symbol cache finds; synthetic chains through libc's real rows and through frame pointers;
// copies cut short; and random registers and stacks over libc's table, the copy between guard
// pages, which must never crash, loop or write more than asked.
#include "unwind/unwinder.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "perf-prof/sample.h"
#include "sym/object.h"
#include "sym/symbolizer.h"
#include "sym/syms.h"

namespace perfprof::unwind {
namespace {

// ---------------------------------------------------------------- capturing our own state

constexpr size_t kCopy = 16384;

struct Captured {
    uint64_t regs[kRegs] = {};  // by DWARF number; regs[kRa] is the pc, as the session fills it
    std::vector<uint8_t> stack;
};

// The end of the mapping holding `addr` (the stack), from /proc/self/maps; 0 if none.
uint64_t mapping_end(uint64_t addr) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        unsigned long long start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) == 2 && addr >= start && addr < end)
            return end;
    }
    return 0;
}

// The raw copy, as the kernel makes it: it reads frames below and around live locals, which
// AddressSanitizer poisons (redzones), so this one function is not instrumented. Volatile 8-byte
// loads keep the compiler from turning the loop back into memcpy, which ASan intercepts.
// sp and the mapping's end are 8-byte aligned, so n is a multiple of 8.
__attribute__((noinline, no_sanitize("address"))) void raw_copy(uint8_t* to, uint64_t from, size_t n) {
    const volatile uint64_t* src = reinterpret_cast<const volatile uint64_t*>(from);
    for (size_t i = 0; i < n / 8; ++i) {
        const uint64_t v = src[i];
        __builtin_memcpy(to + 8 * i, &v, 8);
    }
}

// What the kernel does for a sample: up to kCopy bytes of the stack from the stack pointer, as
// far as the stack is mapped.
__attribute__((noinline)) void copy_stack(Captured* c) {
    const uint64_t sp = c->regs[kRsp], end = mapping_end(sp);
    const size_t n = end > sp ? std::min<uint64_t>(kCopy, end - sp) & ~size_t(7) : 0;
    c->stack.resize(n);
    raw_copy(c->stack.data(), sp, n);
}

extern "C" {
// Three levels of calls that the compiler may neither inline nor turn into jumps, so that each
// has a frame of its own: f3 records its registers at one instruction (the pc is that of the
// instruction after the lea) and copies the stack above them.
__attribute__((noinline)) int unwinder_test_f3(Captured* c) {
    uint64_t* r = c->regs;
    asm volatile(
        "mov %%rax, 0(%0)\n\t"
        "mov %%rdx, 8(%0)\n\t"
        "mov %%rcx, 16(%0)\n\t"
        "mov %%rbx, 24(%0)\n\t"
        "mov %%rsi, 32(%0)\n\t"
        "mov %%rdi, 40(%0)\n\t"
        "mov %%rbp, 48(%0)\n\t"
        "mov %%rsp, 56(%0)\n\t"
        "mov %%r8, 64(%0)\n\t"
        "mov %%r9, 72(%0)\n\t"
        "mov %%r10, 80(%0)\n\t"
        "mov %%r11, 88(%0)\n\t"
        "mov %%r12, 96(%0)\n\t"
        "mov %%r13, 104(%0)\n\t"
        "mov %%r14, 112(%0)\n\t"
        "mov %%r15, 120(%0)\n\t"
        "lea 0(%%rip), %%rax\n\t"
        "mov %%rax, 128(%0)\n\t"
        :
        : "r"(r)
        : "rax", "memory");
    copy_stack(c);
    return int(c->stack.size() & 1);
}

// Keeps values in callee-saved registers across the call: its CFI saves them in the prologue.
__attribute__((noinline)) int unwinder_test_f2(Captured* c) {
    asm volatile("" ::: "rbx", "r12", "r13", "r14");
    const int r = unwinder_test_f3(c);
    asm volatile("" ::: "memory");
    return r + 1;
}

// A frame with a local array: a CFA offset of its own.
__attribute__((noinline)) int unwinder_test_f1(Captured* c) {
    volatile char pad[200];
    pad[0] = 1;
    const int r = unwinder_test_f2(c);
    asm volatile("" ::: "memory");
    return r + pad[0];
}
}

// This process as the session's ProcessSpace sees a sampled one: the symbol cache's object at a pc.
class SelfSpace final : public AddressSpace {
public:
    bool find(uint64_t pc, CfiTable** table, uint64_t* obj_pc) override {
        return symbols.locate(::getpid(), pc, table, obj_pc);
    }
    // The symbol of a return address (of the pc itself for the first frame).
    std::string name(uint64_t addr, bool first) {
        sym::Frame f;
        if (addr == kChainTruncated) return "[truncated]";
        if (!symbols.resolve(uint32_t(::getpid()), first ? addr : addr - 1, f) || !f.sym) return "?";
        return *f.sym;
    }
    sym::Symbolizer symbols;
};

UserState state_of(const Captured& c, size_t stack_size) {
    UserState st;
    std::memcpy(st.regs, c.regs, sizeof st.regs);
    st.valid = (1u << kRegs) - 1;
    st.stack = c.stack.data();
    st.stack_size = std::min(stack_size, c.stack.size());
    return st;
}

std::string chain_text(SelfSpace& space, const uint64_t* out, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; i++) s += "\n  " + space.name(out[i], i == 0);
    return s;
}

TEST(Unwinder, SelfUnwindThroughCfi) {
    Captured c;
    ASSERT_GE(unwinder_test_f1(&c), 1);
    ASSERT_GT(c.stack.size(), 1024u);
    SelfSpace space;
    uint64_t out[128];
    UnwindStats stats;
    const size_t n = unwind(space, state_of(c, c.stack.size()), out, 128, &stats);
    const std::string chain = chain_text(space, out, n);
    ASSERT_GE(n, 5u) << chain;
    EXPECT_EQ(out[0], c.regs[kRa]);
    EXPECT_EQ(space.name(out[0], true), "unwinder_test_f3") << chain;
    EXPECT_EQ(space.name(out[1], false), "unwinder_test_f2") << chain;
    EXPECT_EQ(space.name(out[2], false), "unwinder_test_f1") << chain;
    EXPECT_NE(space.name(out[3], false).find("Unwinder_SelfUnwindThroughCfi_Test::TestBody"),
              std::string::npos)
        << chain;
    EXPECT_EQ(stats.frames, out[n - 1] == kChainTruncated ? n - 1 : n);  // the marker is no frame
    EXPECT_GE(stats.cfi_frames, 4u);
    // A 16 KB copy holds every frame of gtest's call tree: the chain goes on through main and
    // libc's start-up code to _start, whose return address is undefined (the outermost frame).
    std::string names;
    for (size_t i = 0; i < n; i++) names += space.name(out[i], i == 0) + " ";
    EXPECT_NE(names.find(" main "), std::string::npos) << chain;
    if (out[n - 1] != kChainTruncated) {
        EXPECT_EQ(space.name(out[n - 1], false), "_start") << chain;
        EXPECT_EQ(stats.truncated, 0u);
        EXPECT_EQ(stats.broken, 0u) << chain;
    }
    std::printf("[ unwind   ] %zu frames from a %zu-byte copy:%s\n", n, c.stack.size(), chain.c_str());
}

TEST(Unwinder, CopyCutShortEndsInTruncated) {
    Captured c;
    ASSERT_GE(unwinder_test_f1(&c), 1);
    SelfSpace space;
    uint64_t full[128];
    const size_t nfull = unwind(space, state_of(c, c.stack.size()), full, 128);
    ASSERT_GE(nfull, 5u);
    for (size_t size : {size_t(0), size_t(8), size_t(64), size_t(256), size_t(700)}) {
        uint64_t out[128];
        UnwindStats stats;
        const size_t n = unwind(space, state_of(c, size), out, 128, &stats);
        SCOPED_TRACE(std::to_string(size) + " bytes:" + chain_text(space, out, n));
        ASSERT_GE(n, 2u);
        ASSERT_LT(n, nfull);
        EXPECT_EQ(out[n - 1], kChainTruncated);
        for (size_t i = 0; i + 1 < n; i++) EXPECT_EQ(out[i], full[i]) << i;
        EXPECT_EQ(stats.truncated, 1u);
    }
    // `max` reached before the end: the last slot says so.
    for (size_t max : {size_t(2), size_t(3), size_t(4)}) {
        uint64_t out[8];
        const size_t n = unwind(space, state_of(c, c.stack.size()), out, max);
        ASSERT_EQ(n, max);
        EXPECT_EQ(out[max - 1], kChainTruncated);
        for (size_t i = 0; i + 1 < max; i++) EXPECT_EQ(out[i], full[i]);
    }
    // Room for one entry: one is written (the pc, or the marker), never a second.
    uint64_t one[2] = {42, 43};
    EXPECT_EQ(unwind(space, state_of(c, c.stack.size()), one, 1), 1u);
    EXPECT_EQ(one[1], 43u) << "wrote past max";
    uint64_t none[1] = {42};
    EXPECT_EQ(unwind(space, state_of(c, c.stack.size()), none, 0), 0u);
    EXPECT_EQ(none[0], 42u);
}

// ---------------------------------------------------------------- synthetic address spaces

// One object's table mapped at `base` (its address 0 at base), or nothing (`table` null: no
// mapping anywhere), or an object without CFI (`table` empty).
class FakeSpace final : public AddressSpace {
public:
    FakeSpace(CfiTable* table, uint64_t base, uint64_t size) : table_(table), base_(base), size_(size) {}
    bool find(uint64_t pc, CfiTable** table, uint64_t* obj_pc) override {
        if (!table_ || pc < base_ || pc - base_ >= size_) return false;
        *table = table_;
        *obj_pc = pc - base_;
        return true;
    }

private:
    CfiTable* table_;
    uint64_t base_, size_;
};

CfiTable& libc_cfi() {
    static std::shared_ptr<sym::Object> libc = [] {
        for (const char* p :
             {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"})
            if (::access(p, R_OK) == 0) return sym::get_object(p);
        return std::shared_ptr<sym::Object>();
    }();
    static CfiTable empty;
    return libc ? libc->cfi() : empty;
}

// A stack of 8-byte words at `sp` for the synthetic chains.
struct FakeStack {
    static constexpr uint64_t kSp = 0x7ffd00001000;
    std::vector<uint64_t> words = std::vector<uint64_t>(64, 0);
    void set(uint64_t addr, uint64_t v) { words.at((addr - kSp) / 8) = v; }
    UserState state(uint64_t pc, uint64_t rbp) const {
        UserState st;
        st.regs[kRa] = pc;
        st.regs[kRsp] = kSp;
        st.regs[kRbp] = rbp;
        st.valid = (1u << kRegs) - 1;
        st.stack = reinterpret_cast<const uint8_t*>(words.data());
        st.stack_size = words.size() * 8;
        return st;
    }
};

TEST(Unwinder, FramePointersWhereNoCfi) {
    const uint64_t sp = FakeStack::kSp;
    FakeStack s;
    // rbp -> [next rbp, return address]: three frames, the last with a null frame pointer (what
    // _start leaves), so the chain ends there.
    s.set(sp + 0x20, sp + 0x60);
    s.set(sp + 0x28, 0x402001);
    s.set(sp + 0x60, sp + 0xa0);
    s.set(sp + 0x68, 0x403001);
    s.set(sp + 0xa0, 0);
    s.set(sp + 0xa8, 0x404001);
    CfiTable empty;
    for (CfiTable* t : {static_cast<CfiTable*>(nullptr), &empty}) {
        SCOPED_TRACE(t ? "an object without CFI" : "no mapping");
        FakeSpace space(t, 0x400000, 0x10000);
        uint64_t out[16];
        UnwindStats stats;
        const size_t n = unwind(space, s.state(0x401000, sp + 0x20), out, 16, &stats);
        ASSERT_EQ(n, 4u);
        EXPECT_EQ(out[0], 0x401000u);
        EXPECT_EQ(out[1], 0x402001u);
        EXPECT_EQ(out[2], 0x403001u);
        EXPECT_EQ(out[3], 0x404001u);
        EXPECT_EQ(stats.fp_frames, 3u);
        EXPECT_EQ(stats.cfi_frames, 0u);
    }
    // A frame pointer chain that does not move up (a loop, or pointing down) ends, whatever max.
    FakeStack loop;
    loop.set(sp + 0x20, sp + 0x20);
    loop.set(sp + 0x28, 0x402001);
    FakeStack down;
    down.set(sp + 0x40, sp + 0x10);
    down.set(sp + 0x48, 0x402001);
    down.set(sp + 0x10, sp + 0x40);
    down.set(sp + 0x18, 0x403001);
    FakeSpace none(nullptr, 0, 0);
    for (auto [st, what] :
         {std::pair{loop.state(0x401000, sp + 0x20), "loop"}, {down.state(0x401000, sp + 0x40), "down"}}) {
        uint64_t out[1000];
        const size_t n = unwind(none, st, out, 1000);
        EXPECT_LE(n, 4u) << what;
        EXPECT_GE(n, 1u) << what;
    }
    // A frame pointer outside the copy: the chain ends (truncated or broken), nothing is read.
    uint64_t out[16];
    const size_t n = unwind(none, s.state(0x401000, 0x1000), out, 16);
    EXPECT_GE(n, 1u);
    EXPECT_LE(n, 2u);
}

// Whether an entry of a chain is a context marker (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER, ...,
// kChainTruncated): values no user address takes, which the stack printer and the folders read
// as markers, not frames.
bool is_marker(uint64_t v) {
    return v >= uint64_t(PERF_CONTEXT_MAX);
}

TEST(Unwinder, GarbageReturnAddressesAreNoMarkers) {
    // A return address read from a stack that is not what the unwinder thinks (a frame-pointer
    // chain through garbage, here) can hold anything, PERF_CONTEXT_KERNEL or kChainTruncated too:
    // written as a frame, it would read as a marker (kernel frames follow, or the chain ends).
    const uint64_t sp = FakeStack::kSp;
    FakeSpace none(nullptr, 0, 0);
    for (uint64_t garbage : {uint64_t(PERF_CONTEXT_KERNEL), uint64_t(PERF_CONTEXT_USER), kChainTruncated,
                             uint64_t(PERF_CONTEXT_MAX)}) {
        FakeStack s;
        s.set(sp + 0x20, sp + 0x60);
        s.set(sp + 0x28, 0x402001);
        s.set(sp + 0x60, sp + 0xa0);
        s.set(sp + 0x68, garbage);
        s.set(sp + 0xa0, 0);
        s.set(sp + 0xa8, 0x404001);
        uint64_t out[16];
        const size_t n = unwind(none, s.state(0x401000, sp + 0x20), out, 16);
        ASSERT_GE(n, 2u);
        EXPECT_EQ(out[1], 0x402001u);
        for (size_t i = 0; i < n; i++)
            EXPECT_TRUE(!is_marker(out[i]) || (i == n - 1 && out[i] == kChainTruncated))
                << std::hex << "entry " << i << " is 0x" << out[i];
    }
}

// Functions of libc whose first row has the CIE's rule (CFA = rsp + 8, return address at CFA - 8:
// nothing pushed yet) for at least two bytes, by their first address (libc's own).
std::vector<uint64_t> entry_rows(CfiTable& t) {
    std::vector<uint64_t> pcs;
    for (const CfiTable::Range& f : t.ranges()) {
        const Row* r = t.find(f.begin);
        if (f.end - f.begin < 2 || !r || r->cfa_kind != CfaKind::RegOffset || r->cfa_reg != kRsp ||
            r->cfa_offset != 8 || r->flags)
            continue;
        bool ra = false;
        for (const RegRule& x : t.rules(*r))
            ra |= x.reg == kRa && x.kind == RuleKind::Offset && x.value == -8;
        const Row* next = t.find(f.begin + 1);
        if (ra && next && next->pc == f.begin) pcs.push_back(f.begin);
    }
    return pcs;
}

TEST(Unwinder, SyntheticChainThroughLibcRows) {
    CfiTable& t = libc_cfi();
    ASSERT_FALSE(t.empty()) << "libc's CFI table is empty";
    const std::vector<uint64_t> entries = entry_rows(t);
    ASSERT_GT(entries.size(), 100u);
    const uint64_t base = 0x7f0000000000, sp = FakeStack::kSp;
    FakeSpace space(&t, base, t.ranges().back().end);
    // Each frame at a function's first instruction: its return address is the word at rsp, and
    // the caller's rsp is 8 above. Return addresses point one byte into the callers' entry rows.
    FakeStack s;
    const uint64_t ra1 = base + entries[10] + 1, ra2 = base + entries[20] + 1, ra3 = base + entries[30] + 1;
    s.set(sp, ra1);
    s.set(sp + 8, ra2);
    s.set(sp + 16, ra3);
    uint64_t out[16];
    UnwindStats stats;
    const size_t n = unwind(space, s.state(base + entries[0], 0), out, 16, &stats);
    ASSERT_GE(n, 4u);
    EXPECT_EQ(out[0], base + entries[0]);
    EXPECT_EQ(out[1], ra1);
    EXPECT_EQ(out[2], ra2);
    EXPECT_EQ(out[3], ra3);
    EXPECT_GE(stats.cfi_frames, 3u);
    // The word after ra3 is 0: no frame beyond it.
    EXPECT_LE(n, 5u);
}

// ---------------------------------------------------------------- random states

// Pages around the stack copy that fault on any access: the copy is placed against one or the
// other, so that a read past either end of it crashes the test.
class GuardedCopy {
public:
    static constexpr size_t kPage = 4096, kData = 2 * kPage;
    GuardedCopy() {
        base_ = static_cast<uint8_t*>(
            ::mmap(nullptr, kData + 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (base_ == MAP_FAILED) base_ = nullptr;
        if (!base_) return;
        ::mprotect(base_, kPage, PROT_NONE);
        ::mprotect(base_ + kPage + kData, kPage, PROT_NONE);
    }
    ~GuardedCopy() {
        if (base_) ::munmap(base_, kData + 2 * kPage);
    }
    bool ok() const { return base_ != nullptr; }
    // `size` (<= kData) bytes against the lower guard, or against the upper one.
    uint8_t* place(size_t size, bool at_end) { return base_ + kPage + (at_end ? kData - size : 0); }

private:
    uint8_t* base_ = nullptr;
};

TEST(Unwinder, RandomStatesNeverCrashOrLoop) {
    CfiTable& t = libc_cfi();
    ASSERT_FALSE(t.empty());
    const std::vector<CfiTable::Range> fdes = t.ranges();
    const uint64_t base = 0x7f1200000000, span = fdes.back().end;
    FakeSpace space(&t, base, span);
    GuardedCopy guard;
    ASSERT_TRUE(guard.ok());
    std::mt19937_64 rng(0x5eed);
    auto code = [&]() -> uint64_t {  // an address in libc: a function's start, one in it, or anywhere
        const CfiTable::Range& f = fdes[rng() % fdes.size()];
        switch (rng() % 4) {
            case 0:
                return base + f.begin;
            case 1:
                return base + f.begin + rng() % (f.end - f.begin);
            case 2:
                return base + rng() % span;
            default:
                return rng();
        }
    };
    uint64_t out[130];
    UnwindStats total;
    size_t longest = 0, truncated_last = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const int kIterations = 200000;
    for (int iter = 0; iter < kIterations; iter++) {
        // Mostly up to 1 KB (a few frames), sometimes empty, sometimes up to the whole 8 KB.
        const size_t words = rng() % 16 == 0 ? GuardedCopy::kData / 8 + 1 : 129;
        const size_t size = (rng() % 8 == 0) ? 0 : 8 * (rng() % words);
        uint8_t* stack = guard.place(size, iter & 1);
        const uint64_t sp = 0x7ffe00000000 + 8 * (rng() % 4096);
        for (size_t i = 0; i + 8 <= size; i += 8) {
            uint64_t w;
            switch (rng() % 4) {
                case 0:
                    w = code();
                    break;
                case 1:
                    w = sp + 8 * (rng() % (size / 8 + 2));
                    break;  // into the copy, or just past it
                case 2:
                    w = 0;
                    break;
                default:
                    w = rng();
                    break;
            }
            std::memcpy(stack + i, &w, 8);
        }
        UserState st;
        for (uint64_t& r : st.regs) r = (rng() & 1) ? sp + 8 * (rng() % 1100) : rng();
        st.regs[kRsp] = sp;
        st.regs[kRa] = code();
        st.valid = (rng() % 8 == 0) ? uint32_t(rng()) : (1u << kRegs) - 1;
        st.stack = stack;
        st.stack_size = size;
        const size_t max = (rng() % 16 == 0) ? rng() % 4 : 1 + rng() % 127;
        out[max] = 0xdeadbeef;  // the slot after the last allowed one stays untouched
        UnwindStats stats;
        const size_t n = unwind(space, st, out, max, &stats);
        ASSERT_LE(n, max) << "iteration " << iter;
        ASSERT_EQ(out[max], 0xdeadbeefu) << "iteration " << iter;
        ASSERT_EQ(stats.frames, n - (n && out[n - 1] == kChainTruncated)) << "iteration " << iter;
        ASSERT_LE(stats.truncated + stats.broken, 1u) << "iteration " << iter;
        longest = std::max(longest, n);
        truncated_last += n > 0 && out[n - 1] == kChainTruncated;
        total.frames += stats.frames, total.cfi_frames += stats.cfi_frames,
            total.fp_frames += stats.fp_frames;
        total.truncated += stats.truncated, total.broken += stats.broken;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "[ unwind   ] %d random states in %.2f s: %llu frames (%llu CFI, %llu FP steps), longest %zu, "
        "%llu truncated, %llu broken, %zu ending in [truncated]\n",
        kIterations, s, (unsigned long long)total.frames, (unsigned long long)total.cfi_frames,
        (unsigned long long)total.fp_frames, longest, (unsigned long long)total.truncated,
        (unsigned long long)total.broken, truncated_last);
    EXPECT_GT(total.cfi_frames, 0u);  // the random states did reach libc's rows
}

}  // namespace
}  // namespace perfprof::unwind
