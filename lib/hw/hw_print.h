// What the hardware-event profilers print alike (SPEC-PROFILERS §P0, §P8, §P12): the x86-64
// register block of a sample's user or interrupt-time registers, EVTS-T (truncated
// timestamps), the line head "{WALL} {comm:>16} {tid:>6} [{cpu:03}] {EVTS-T}: " and the
// rendering of a faulting or trapping instruction pointer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "perf-prof/profiler.h"

namespace perfprof::sym {
class Symbolizer;
}

namespace perfprof::hw {

// The kernel's enum perf_event_x86_regs (arch/x86/include/uapi/asm/perf_regs.h): a sample's
// REGS_USER / REGS_INTR values come one per bit of the mask, lowest bit first.
enum X86Reg {
    kAX,
    kBX,
    kCX,
    kDX,
    kSI,
    kDI,
    kBP,
    kSP,
    kIP,
    kFLAGS,
    kCS,
    kSS,
    kDS,
    kES,
    kFS,
    kGS,
    kR8,
    kR9,
    kR10,
    kR11,
    kR12,
    kR13,
    kR14,
    kR15,
    kX86RegCount
};

// Every general register but the segment registers DS, ES, FS, GS (SPEC §P8's
// sample_regs_user and §P12's sample_regs_intr).
constexpr uint64_t kX86GeneralRegs =
    ((uint64_t(1) << kX86RegCount) - 1) &
    ~((uint64_t(1) << kDS) | (uint64_t(1) << kES) | (uint64_t(1) << kFS) | (uint64_t(1) << kGS));

// The value of `reg` among `values` sampled with `mask`; false (v = 0) when not sampled.
bool reg_value(uint64_t mask, const uint64_t* values, int reg, uint64_t& v);

// The 7-line register block (6-space indent, SPEC §P8):
//       RIP: {ip:x16} RSP: {sp:x16} RFLAGS:{flags:x8}
//       RAX: ... RBX: ... RCX: ...   (RDX RSI RDI / RBP R08 R09 / R10 R11 R12 / R13 R14 R15)
//       CS: {:x4} SS: {:x4}
// Registers not in `mask` print as 0; nothing when `values` is null.
void append_regs_block(uint64_t mask, const uint64_t* values, std::string& out);

// EVTS-T: "{t/1e9}.{(t%1e9)/1000:06}", truncated where EVTS rounds.
void append_evts_t(uint64_t ns, std::string& out);

// "{WALL(ev)} {comm:>16} {tid:>6} [{cpu:03}] {EVTS-T}: ". A non-empty `title` (Sample::title,
// multi-trace --detail) replaces WALL, padded to its 26 columns, and is followed by the blank
// marker column of titled lines, as output::append_line_head does.
void append_head(Context& ctx, uint64_t time, uint32_t tid, uint32_t cpu, std::string& line,
                 std::string_view title = {});

// Kernel addresses: the top of the 64-bit space (SPEC §P8).
inline bool kernel_address(uint64_t a) {
    return a >= 0xffff000000000000ull;
}

// SPEC §P8's IP: "{sym}+0x{off:x}" (0x0 at a symbol's start) for a kernel ip (kallsyms); for a user ip, when
// `user_symbols` (samples handled as they come, the process still there) its symbol in process `pid`
// ("Unknown" when none), else the raw "{ip:016x}".
void append_ip(sym::Symbolizer& symbols, uint32_t pid, uint64_t ip, bool user_symbols, std::string& out);

}  // namespace perfprof::hw
