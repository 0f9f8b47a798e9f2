#include "unwind/call_graph.h"

#include <charconv>
#include <string>

#include "perf-prof/error.h"

namespace perfprof::unwind {

namespace {

// perf's x86 register numbers (asm/perf_regs.h): AX BX CX DX SI DI BP SP IP FLAGS CS SS DS ES FS
// GS R8..R15. We ask for the general registers and the ip: bits 0-8 and 16-23.
constexpr uint64_t kRegsMask = 0x1ffull | (0xffull << 16);
// The kernel's default perf_event_max_stack.
constexpr size_t kDefaultMaxStack = 127;
// The DWARF register of each perf register, -1 for those the unwinder does not track.
constexpr int8_t kDwarfOf[24] = {kRax, kRbx, kRcx, kRdx, kRsi, kRdi, kRbp, kRsp, kRa, -1, -1, -1,
                                 -1,   -1,   -1,   -1,   8,    9,    10,   11,   12,  13, 14, 15};

// A process's address space as the code locator knows it: the object mapped at a pc, and its CFI.
class ProcessSpace final : public AddressSpace {
public:
    ProcessSpace(CodeLocator& code, int tgid) : code_(code), tgid_(tgid) {}
    bool find(uint64_t pc, CfiTable** table, uint64_t* obj_pc) override {
        return code_.locate(tgid_, pc, table, obj_pc);
    }

private:
    CodeLocator& code_;
    int tgid_;
};

}  // namespace

uint32_t parse_call_graph(std::string_view text) {
    auto bad = [&](const std::string& why) {
        return Error::usage("--call-graph " + std::string(text) + ": " + why);
    };
    if (text == "fp") return 0;
    std::string_view mode = text.substr(0, text.find(','));
    if (mode != "dwarf") throw bad("expected fp or dwarf[,size]");
    if (mode.size() == text.size()) return kDefaultStackCopy;
    std::string_view size = text.substr(mode.size() + 1);
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (ec != std::errc() || end != size.data() + size.size() || n == 0)
        throw bad("the stack size must be a number of bytes");
    n = (n + 7) & ~uint64_t(7);
    if (n > kMaxStackCopy) throw bad("the stack size is at most " + std::to_string(kMaxStackCopy) + " bytes");
    return uint32_t(n);
}

void request_stacks(perf_event_attr& a, bool kernel, bool user, uint32_t dwarf_stack) {
    if (user && dwarf_stack) {
        a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = kRegsMask;
        a.sample_stack_user = dwarf_stack;
        if (kernel) {
            a.sample_type |= PERF_SAMPLE_CALLCHAIN;
            a.exclude_callchain_user = 1;
            a.exclude_callchain_kernel = 0;
        }
        return;
    }
    a.sample_type |= PERF_SAMPLE_CALLCHAIN;
    a.exclude_callchain_user = !user;
    a.exclude_callchain_kernel = !kernel;
}

void SampleUnwinder::unwind(Sample& s, const perf_event_attr& a, CodeLocator& code) {
    // The frame limit bounds the whole chain, as the kernel's does for frame pointers: the user
    // part gets what the kernel part leaves.
    const size_t max = a.sample_max_stack ? a.sample_max_stack : kDefaultMaxStack;
    chain_.resize(s.callchain_nr + 2 + max);  // + PERF_CONTEXT_USER + kChainTruncated
    size_t n = 0, kernel_frames = 0;
    // The kernel part of the kernel's chain (it has no user part: exclude_callchain_user).
    for (uint64_t i = 0; i < s.callchain_nr && s.callchain[i] != PERF_CONTEXT_USER; i++) {
        kernel_frames += s.callchain[i] < PERF_CONTEXT_MAX;
        chain_[n++] = s.callchain[i];
    }
    const size_t max_user = kernel_frames < max ? max - kernel_frames : 0;
    if (s.user_abi != PERF_SAMPLE_REGS_ABI_NONE && s.user_regs) {
        UserState st;
        int k = 0;
        for (int bit = 0; bit < 64; bit++) {
            if (!(a.sample_regs_user & (1ull << bit))) continue;
            const uint64_t v = s.user_regs[k++];
            if (bit < 24 && kDwarfOf[bit] >= 0) {
                st.regs[kDwarfOf[bit]] = v;
                st.valid |= 1u << kDwarfOf[bit];
            }
        }
        st.stack = s.user_stack;
        st.stack_size = s.user_stack ? s.user_stack_size : 0;
        if (st.valid & (1u << kRa)) {
            ProcessSpace space(code, int(s.pid));
            chain_[n++] = PERF_CONTEXT_USER;
            n += perfprof::unwind::unwind(space, st, chain_.data() + n, max_user + 1, &stats_);
        }
        samples_++;
    }
    s.callchain = chain_.data();
    s.callchain_nr = n;
}

}  // namespace perfprof::unwind
