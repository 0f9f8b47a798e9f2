// lib/unwind/call_graph: --call-graph fp|dwarf[,SIZE] and what it asks of the kernel.
#include <gtest/gtest.h>

#include <linux/perf_event.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "perf-prof/error.h"
#include "sym/symbolizer.h"
#include "unwind/call_graph.h"

namespace perfprof::unwind {
namespace {

// The usage error parse_call_graph(text) raises; fails the test when it raises none.
std::string usage_error(const std::string& text) {
    try {
        parse_call_graph(text);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error for " << text;
    return {};
}

TEST(ParseCallGraph, Modes) {
    EXPECT_EQ(parse_call_graph("fp"), 0u);
    EXPECT_EQ(parse_call_graph("dwarf"), kDefaultStackCopy);
    EXPECT_EQ(kDefaultStackCopy, 8192u);
    EXPECT_EQ(parse_call_graph("dwarf,4096"), 4096u);
    EXPECT_EQ(parse_call_graph("dwarf,1024"), 1024u);
}

TEST(ParseCallGraph, SizeRoundedUpToEightBytes) {
    EXPECT_EQ(parse_call_graph("dwarf,100"), 104u);
    EXPECT_EQ(parse_call_graph("dwarf,1"), 8u);
    EXPECT_EQ(parse_call_graph("dwarf,8"), 8u);
    EXPECT_EQ(parse_call_graph("dwarf,65528"), kMaxStackCopy);
    EXPECT_EQ(parse_call_graph("dwarf,65521"), kMaxStackCopy);  // rounds up to the limit itself
}

TEST(ParseCallGraph, BadInputIsAUsageError) {
    EXPECT_EQ(usage_error("foo"), "--call-graph foo: expected fp or dwarf[,size]");
    EXPECT_EQ(usage_error("dwarf,0"), "--call-graph dwarf,0: the stack size must be a number of bytes");
    EXPECT_EQ(usage_error("dwarf,x"), "--call-graph dwarf,x: the stack size must be a number of bytes");
    EXPECT_EQ(usage_error("dwarf,70000"), "--call-graph dwarf,70000: the stack size is at most 65528 bytes");
    usage_error("dwarf,65529");  // rounds to 65536: over the kernel's u16 limit
    usage_error("dwarf,");
    usage_error("dwarf,-8");
    usage_error("dwarf,8k");
    usage_error("dwarf,99999999999999999999");
    usage_error("");
    usage_error("fp,8192");
    usage_error("lbr");
    usage_error("DWARF");
}

TEST(RequestStacks, FramePointers) {
    perf_event_attr a{};
    request_stacks(a, true, true, 0);
    EXPECT_EQ(a.sample_type, uint64_t(PERF_SAMPLE_CALLCHAIN));
    EXPECT_FALSE(a.exclude_callchain_user);
    EXPECT_FALSE(a.exclude_callchain_kernel);
    EXPECT_FALSE(carries_user_stack(a));

    perf_event_attr u{};
    request_stacks(u, false, true, 0);
    EXPECT_EQ(u.sample_type, uint64_t(PERF_SAMPLE_CALLCHAIN));
    EXPECT_FALSE(u.exclude_callchain_user);
    EXPECT_TRUE(u.exclude_callchain_kernel);

    perf_event_attr k{};
    request_stacks(k, true, false, 8192);  // no user half: the stack size does not matter
    EXPECT_EQ(k.sample_type, uint64_t(PERF_SAMPLE_CALLCHAIN));
    EXPECT_TRUE(k.exclude_callchain_user);
    EXPECT_FALSE(k.exclude_callchain_kernel);
    EXPECT_EQ(k.sample_stack_user, 0u);
    EXPECT_FALSE(carries_user_stack(k));
}

TEST(RequestStacks, DwarfWithKernelHalf) {
    perf_event_attr a{};
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;  // kept
    request_stacks(a, true, true, 4096);
    EXPECT_EQ(a.sample_type, uint64_t(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
                                      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER));
    EXPECT_EQ(a.sample_stack_user, 4096u);
    // The kernel's chain keeps its kernel part only: the user part is ours to unwind.
    EXPECT_TRUE(a.exclude_callchain_user);
    EXPECT_FALSE(a.exclude_callchain_kernel);
    // The registers the unwinder needs: ip, sp and bp at least (perf's x86 numbering).
    for (int reg : {0, 1, 2, 3, 4, 5, 6, 7, 8}) EXPECT_TRUE(a.sample_regs_user & (1ull << reg)) << reg;
    for (int reg = 16; reg < 24; reg++) EXPECT_TRUE(a.sample_regs_user & (1ull << reg)) << reg;
    // Not FLAGS, the segment registers or anything past R15 (the kernel rejects unknown bits).
    for (int reg = 9; reg < 16; reg++) EXPECT_FALSE(a.sample_regs_user & (1ull << reg)) << reg;
    EXPECT_EQ(a.sample_regs_user >> 24, 0u);
    EXPECT_TRUE(carries_user_stack(a));
}

TEST(RequestStacks, DwarfUserOnly) {
    perf_event_attr a{};
    request_stacks(a, false, true, kMaxStackCopy);
    // No kernel half: no kernel chain at all, only the registers and the copy.
    EXPECT_EQ(a.sample_type, uint64_t(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER));
    EXPECT_EQ(a.sample_stack_user, kMaxStackCopy);
    EXPECT_NE(a.sample_regs_user, 0u);
    EXPECT_TRUE(carries_user_stack(a));
}

TEST(RequestStacks, NoHalves) {
    perf_event_attr a{};
    request_stacks(a, false, false, 8192);
    EXPECT_FALSE(carries_user_stack(a));
    EXPECT_EQ(a.sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER), 0u);
}

}  // namespace
}  // namespace perfprof::unwind

namespace perfprof::unwind {
namespace {

__attribute__((noinline)) void sampled_function() {
    asm volatile("");
}

// A sample of this process with a two-frame kernel part, its pc in sampled_function and an
// empty stack copy: the unwinder can name the pc, and nothing beyond it.
std::vector<uint64_t> unwound_chain(uint16_t max_stack) {
    perf_event_attr a{};
    request_stacks(a, true, true, kDefaultStackCopy);
    a.sample_max_stack = max_stack;
    static const uint64_t kernel[] = {PERF_CONTEXT_KERNEL, 0xffffffff81000000ull, 0xffffffff81000010ull};
    std::vector<uint64_t> regs(size_t(__builtin_popcountll(a.sample_regs_user)), 0);
    regs[8] = reinterpret_cast<uint64_t>(&sampled_function);  // perf's IP (bit 8)
    regs[7] = 0x7ffe00000000ull;                              // SP (bit 7)
    Sample s;
    s.pid = uint32_t(::getpid());
    s.callchain = kernel;
    s.callchain_nr = 3;
    s.user_abi = PERF_SAMPLE_REGS_ABI_64;
    s.user_regs = regs.data();
    SampleUnwinder u;
    sym::Symbolizer symbols;  // this test's own: nothing kept for the others
    u.unwind(s, a, symbols);
    return std::vector<uint64_t>(s.callchain, s.callchain + s.callchain_nr);
}

TEST(SampleUnwinder, KernelPartThenUnwoundUserPart) {
    const uint64_t pc = reinterpret_cast<uint64_t>(&sampled_function);
    EXPECT_EQ(unwound_chain(0),
              (std::vector<uint64_t>{PERF_CONTEXT_KERNEL, 0xffffffff81000000ull, 0xffffffff81000010ull,
                                     PERF_CONTEXT_USER, pc, kChainTruncated}));
}

// The frame limit bounds the whole chain, as the kernel's does: the user part gets what the
// kernel part leaves, and a cut says so.
TEST(SampleUnwinder, FrameLimitCountsTheKernelPart) {
    const uint64_t pc = reinterpret_cast<uint64_t>(&sampled_function);
    EXPECT_EQ(unwound_chain(3),
              (std::vector<uint64_t>{PERF_CONTEXT_KERNEL, 0xffffffff81000000ull, 0xffffffff81000010ull,
                                     PERF_CONTEXT_USER, pc, kChainTruncated}));
    EXPECT_EQ(unwound_chain(2),
              (std::vector<uint64_t>{PERF_CONTEXT_KERNEL, 0xffffffff81000000ull, 0xffffffff81000010ull,
                                     PERF_CONTEXT_USER, kChainTruncated}));
}

}  // namespace
}  // namespace perfprof::unwind
