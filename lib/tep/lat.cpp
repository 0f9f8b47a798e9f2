#include "tep/lat.h"

namespace perfprof::tep {

namespace {

// trace_flag_type bits of the kernel's trace_entry.flags.
constexpr unsigned kIrqsOff = 0x01;
constexpr unsigned kNeedReschedLazy = 0x02;
constexpr unsigned kNeedResched = 0x04;
constexpr unsigned kHardirq = 0x08;
constexpr unsigned kSoftirq = 0x10;
constexpr unsigned kPreemptResched = 0x20;
constexpr unsigned kNmi = 0x40;
constexpr unsigned kBhOff = 0x80;

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

std::string lat_flags(unsigned flags, unsigned preempt_count) {
    std::string out;
    out.reserve(5);

    bool irqs_off = flags & kIrqsOff, bh_off = flags & kBhOff;
    out += irqs_off && bh_off ? 'D' : irqs_off ? 'd' : bh_off ? 'b' : '.';

    bool nr = flags & kNeedResched, lazy = flags & kNeedReschedLazy, pr = flags & kPreemptResched;
    char resched = '.';
    if (nr && lazy && pr)
        resched = 'B';
    else if (nr && pr)
        resched = 'N';
    else if (lazy && pr)
        resched = 'L';
    else if (nr && lazy)
        resched = 'b';
    else if (nr)
        resched = 'n';
    else if (pr)
        resched = 'p';
    else if (lazy)
        resched = 'l';
    out += resched;

    bool nmi = flags & kNmi, hard = flags & kHardirq, soft = flags & kSoftirq;
    out += nmi && hard ? 'Z' : nmi ? 'z' : hard && soft ? 'H' : hard ? 'h' : soft ? 's' : '.';

    // The high nibble is the migrate-disable depth on newer kernels, hence low nibble first.
    unsigned pc = preempt_count & 0xff;
    if (pc == 0) {
        out += '.';
    } else {
        out += kHex[pc & 0xf];
        if (pc >> 4) out += kHex[pc >> 4];
    }
    return out;
}

}  // namespace perfprof::tep
