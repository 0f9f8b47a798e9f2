// One step per frame: the row covering the pc gives the CFA and where the caller's registers
// are; the caller's stack pointer is the CFA (x86-64 psABI); its pc is the return address.
//
// Return addresses are looked up at pc - 1 (the call may be the last instruction of its
// function), except for the sampled pc and the pc a signal frame resumes, which are exact.
#include "unwind/unwinder.h"

#include <cstring>
#include <utility>

#include "perf-prof/sample.h"

namespace perfprof::unwind {

namespace {

constexpr int kMaxExprStack = 64;
constexpr int kMaxExprSteps = 256;

enum class Read { Ok, Beyond, Bad };  // Beyond: past the end of the copy (the stack ran on)

struct Frame {
    uint64_t regs[kRegs];
    uint32_t valid;
    bool has(int r) const { return valid & (1u << r); }
    void set(int r, uint64_t v) {
        regs[r] = v;
        valid |= 1u << r;
    }
};

class Stack {
public:
    Stack(uint64_t base, const uint8_t* data, uint64_t size)
        : base_(base), data_(data), size_(data ? size : 0) {}
    Read read(uint64_t addr, uint64_t* v, unsigned n = 8) const {
        if (addr < base_) return Read::Bad;
        const uint64_t off = addr - base_;
        if (off >= size_ || size_ - off < n) return off < (uint64_t(1) << 32) ? Read::Beyond : Read::Bad;
        *v = 0;
        std::memcpy(v, data_ + off, n);
        return Read::Ok;
    }

private:
    uint64_t base_;
    const uint8_t* data_;
    uint64_t size_;
};

// The operands of a DWARF expression, read from `pc` on; each read is false past the end.
struct ExprBytes {
    std::span<const uint8_t> e;
    size_t pc = 0;

    bool uleb(uint64_t& v) {
        v = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (pc >= e.size()) return false;
            const uint8_t b = e[pc++];
            if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return true;
        }
    }
    bool sleb(int64_t& v) {
        uint64_t u = 0;
        unsigned shift = 0;
        uint8_t b;
        do {
            if (pc >= e.size()) return false;
            b = e[pc++];
            if (shift < 64) u |= uint64_t(b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        if (shift < 64 && (b & 0x40)) u |= ~uint64_t(0) << shift;
        v = int64_t(u);
        return true;
    }
    bool fixed(unsigned n, uint64_t& v) {
        if (e.size() - pc < n) return false;
        v = 0;
        std::memcpy(&v, e.data() + pc, n);
        pc += n;
        return true;
    }
};

// The binary operators (and .. xor, eq .. ne) on the two topmost values, `a` below `b`.
// False for a division by zero or an overflowing one.
bool binary_op(uint8_t op, uint64_t a, uint64_t b, uint64_t& r) {
    const int64_t sa = int64_t(a), sb = int64_t(b);
    switch (op) {
        case 0x1a:  // and
            r = a & b;
            break;
        case 0x1b:  // div
            if (sb == 0 || (sa == INT64_MIN && sb == -1)) return false;
            r = uint64_t(sa / sb);
            break;
        case 0x1c:  // minus
            r = a - b;
            break;
        case 0x1d:  // mod
            if (b == 0) return false;
            r = a % b;
            break;
        case 0x1e:  // mul
            r = a * b;
            break;
        case 0x21:  // or
            r = a | b;
            break;
        case 0x22:  // plus
            r = a + b;
            break;
        case 0x24:  // shl
            r = b >= 64 ? 0 : a << b;
            break;
        case 0x25:  // shr
            r = b >= 64 ? 0 : a >> b;
            break;
        case 0x26:  // shra
            r = uint64_t(b >= 64 ? (sa < 0 ? -1 : 0) : sa >> b);
            break;
        case 0x27:  // xor
            r = a ^ b;
            break;
        case 0x29:  // eq
            r = sa == sb;
            break;
        case 0x2a:  // ge
            r = sa >= sb;
            break;
        case 0x2b:  // gt
            r = sa > sb;
            break;
        case 0x2c:  // le
            r = sa <= sb;
            break;
        case 0x2d:  // lt
            r = sa < sb;
            break;
        case 0x2e:  // ne
            r = sa != sb;
            break;
        default:
            return false;
    }
    return true;
}

bool is_binary_op(uint8_t op) {
    return (op >= 0x1a && op <= 0x1e) || op == 0x21 || op == 0x22 || (op >= 0x24 && op <= 0x27) ||
           (op >= 0x29 && op <= 0x2e);
}

// The operators that rearrange or change the values on the stack in place (dup .. rot, abs,
// neg, not). False where the stack holds too few values. The caller leaves room for one more.
bool stack_op(uint8_t op, uint64_t* st, int& sp, ExprBytes& in) {
    uint64_t u = 0;
    switch (op) {
        case 0x12:  // dup
            if (sp == 0) return false;
            st[sp] = st[sp - 1];
            sp++;
            return true;
        case 0x13:  // drop
            if (sp == 0) return false;
            sp--;
            return true;
        case 0x14:  // over
            if (sp < 2) return false;
            st[sp] = st[sp - 2];
            sp++;
            return true;
        case 0x15:  // pick
            if (!in.fixed(1, u) || u >= uint64_t(sp)) return false;
            st[sp] = st[sp - 1 - int(u)];
            sp++;
            return true;
        case 0x16:  // swap
            if (sp < 2) return false;
            std::swap(st[sp - 1], st[sp - 2]);
            return true;
        case 0x17: {  // rot
            if (sp < 3) return false;
            const uint64_t a = st[sp - 1];
            st[sp - 1] = st[sp - 2];
            st[sp - 2] = st[sp - 3];
            st[sp - 3] = a;
            return true;
        }
        case 0x19:  // abs
            if (sp == 0) return false;
            if (int64_t(st[sp - 1]) < 0) st[sp - 1] = -st[sp - 1];
            return true;
        case 0x1f:  // neg
            if (sp == 0) return false;
            st[sp - 1] = -st[sp - 1];
            return true;
        case 0x20:  // not
            if (sp == 0) return false;
            st[sp - 1] = ~st[sp - 1];
            return true;
        default:
            return false;
    }
}

bool is_stack_op(uint8_t op) {
    return (op >= 0x12 && op <= 0x17) || op == 0x19 || op == 0x1f || op == 0x20;
}

// The constants const1u .. const8s (0x08 .. 0x0f), constu and consts.
bool constant(uint8_t op, ExprBytes& in, uint64_t& v) {
    if (op == 0x10) return in.uleb(v);
    int64_t s = 0;
    if (op == 0x11) {
        if (!in.sleb(s)) return false;
        v = uint64_t(s);
        return true;
    }
    const unsigned n = 1u << ((op - 0x08) / 2);
    if (!in.fixed(n, v)) return false;
    if ((op - 0x08) % 2 && n < 8) {  // signed: extend
        const unsigned bits = n * 8;
        if (v & (uint64_t(1) << (bits - 1))) v |= ~uint64_t(0) << bits;
    }
    return true;
}

// A DWARF expression of a CFI rule (DWARF 5 §2.5): a stack machine over the frame's registers
// and the stack copy. `push` is pushed first (the CFA, for register rules). Bounded in steps.
Read eval(std::span<const uint8_t> e, const Frame& f, const Stack& mem, const uint64_t* push, uint64_t* out) {
    uint64_t st[kMaxExprStack];
    int sp = 0;
    if (push) st[sp++] = *push;
    ExprBytes in{e};
    auto pop = [&](uint64_t& v) {
        if (sp == 0) return false;
        v = st[--sp];
        return true;
    };
    for (int steps = 0; in.pc < e.size(); steps++) {
        if (steps >= kMaxExprSteps || sp >= kMaxExprStack - 1) return Read::Bad;
        const uint8_t op = e[in.pc++];
        uint64_t u = 0, a = 0, b = 0;
        int64_t s = 0;
        if (op >= 0x30 && op <= 0x4f) {  // lit0..lit31
            st[sp++] = op - 0x30;
        } else if (op >= 0x70 && op <= 0x8f) {  // breg0..breg31
            const int r = op - 0x70;
            if (!in.sleb(s) || r >= kRegs || !f.has(r)) return Read::Bad;
            st[sp++] = f.regs[r] + uint64_t(s);
        } else if (op >= 0x08 && op <= 0x11) {  // const1u .. const8s, constu, consts
            if (!constant(op, in, u)) return Read::Bad;
            st[sp++] = u;
        } else if (is_stack_op(op)) {
            if (!stack_op(op, st, sp, in)) return Read::Bad;
        } else if (is_binary_op(op)) {
            if (!pop(b) || !pop(a) || !binary_op(op, a, b, u)) return Read::Bad;
            st[sp++] = u;
        } else if (op == 0x06 || op == 0x94) {  // deref, deref_size
            unsigned n = 8;
            if (op == 0x94) {
                if (!in.fixed(1, u) || u == 0 || u > 8) return Read::Bad;
                n = unsigned(u);
            }
            if (!pop(a)) return Read::Bad;
            if (const Read r = mem.read(a, &b, n); r != Read::Ok) return r;
            st[sp++] = b;
        } else if (op == 0x23) {  // plus_uconst
            if (sp == 0 || !in.uleb(u)) return Read::Bad;
            st[sp - 1] += u;
        } else if (op == 0x28 || op == 0x2f) {  // bra, skip
            if (!in.fixed(2, u)) return Read::Bad;
            if (op == 0x28) {
                if (!pop(a)) return Read::Bad;
                if (a == 0) continue;
            }
            const int64_t to = int64_t(in.pc) + int16_t(u);
            if (to < 0 || uint64_t(to) > e.size()) return Read::Bad;
            in.pc = size_t(to);
        } else if (op == 0x92) {  // bregx
            if (!in.uleb(u) || !in.sleb(s) || u >= kRegs || !f.has(int(u))) return Read::Bad;
            st[sp++] = f.regs[u] + uint64_t(s);
        } else if (op != 0x96) {  // nop; else registers as locations, pieces, calls, TLS...
            return Read::Bad;     // not in CFI we can use
        }
    }
    if (sp == 0) return Read::Bad;
    *out = st[sp - 1];
    return Read::Ok;
}

enum class Step { Ok, End, Truncated, Broken };

// The caller of `cur` into `next` through the CFI row `row`.
Step step_cfi(const CfiTable& t, const Row& row, const Frame& cur, const Stack& mem, Frame& next) {
    uint64_t cfa;
    if (row.cfa_kind == CfaKind::RegOffset) {
        if (!cur.has(row.cfa_reg)) return Step::Broken;
        cfa = cur.regs[row.cfa_reg] + int64_t(row.cfa_offset);
    } else {
        const Read r = eval(t.expression(row.cfa_offset), cur, mem, nullptr, &cfa);
        if (r != Read::Ok) return r == Read::Beyond ? Step::Truncated : Step::Broken;
    }
    next = cur;
    next.valid &= ~(1u << kRa);  // the return address needs a rule of its own
    for (const RegRule& rr : t.rules(row)) {
        uint64_t v = 0;
        Read r = Read::Ok;
        switch (rr.kind) {
            case RuleKind::Undefined:
                next.valid &= ~(1u << rr.reg);
                continue;
            case RuleKind::SameValue:
                continue;
            case RuleKind::Offset:
                r = mem.read(cfa + int64_t(rr.value), &v);
                break;
            case RuleKind::ValOffset:
                v = cfa + int64_t(rr.value);
                break;
            case RuleKind::Register:
                if (!cur.has(rr.value)) {
                    next.valid &= ~(1u << rr.reg);
                    continue;
                }
                v = cur.regs[rr.value];
                break;
            case RuleKind::Expression:
            case RuleKind::ValExpression: {
                uint64_t at = 0;
                r = eval(t.expression(rr.value), cur, mem, &cfa, &at);
                if (r == Read::Ok && rr.kind == RuleKind::Expression) r = mem.read(at, &v);
                if (rr.kind == RuleKind::ValExpression) v = at;
                break;
            }
        }
        if (r == Read::Beyond) return Step::Truncated;
        if (r == Read::Bad) {
            if (rr.reg == kRa) return Step::Broken;
            next.valid &= ~(1u << rr.reg);  // a register we cannot recover; it may not matter
            continue;
        }
        next.set(rr.reg, v);
    }
    if (!next.has(kRa)) return Step::End;  // the outermost frame (_start, clone: ra undefined)
    next.set(kRsp, cfa);
    return Step::Ok;
}

// The caller through the frame-pointer chain: [rbp] is the caller's rbp, [rbp+8] the return
// address, and the caller's stack pointer is rbp+16.
Step step_fp(const Frame& cur, const Stack& mem, Frame& next) {
    if (!cur.has(kRbp)) return Step::Broken;
    const uint64_t rbp = cur.regs[kRbp];
    // The psABI has _start clear rbp: the outermost frame (ld.so's _start has no CFI).
    if (rbp == 0) return Step::End;
    uint64_t saved_rbp = 0, ra = 0;
    const Read a = mem.read(rbp, &saved_rbp), b = mem.read(rbp + 8, &ra);
    if (a == Read::Bad || b == Read::Bad) return Step::Broken;
    if (a == Read::Beyond || b == Read::Beyond) return Step::Truncated;
    next = cur;
    next.set(kRbp, saved_rbp);
    next.set(kRa, ra);
    next.set(kRsp, rbp + 16);
    return Step::Ok;
}

}  // namespace

size_t unwind(AddressSpace& space, const UserState& state, uint64_t* out, size_t max, UnwindStats* stats) {
    UnwindStats local;
    UnwindStats& s = stats ? *stats : local;
    if (max == 0 || !(state.valid & (1u << kRa)) || state.regs[kRa] >> 63) return 0;
    Frame cur{};
    std::memcpy(cur.regs, state.regs, sizeof cur.regs);
    cur.valid = state.valid;
    const Stack mem(state.regs[kRsp], state.stack, state.valid & (1u << kRsp) ? state.stack_size : 0);
    size_t n = 0;
    out[n++] = cur.regs[kRa];
    bool exact = true;  // the pc is where execution is, not a return address
    bool signal = false;
    while (true) {
        const uint64_t pc = cur.regs[kRa];
        const uint64_t lookup = exact ? pc : pc - 1;
        CfiTable* table = nullptr;
        uint64_t obj_pc = 0;
        const Row* row = nullptr;
        if (space.find(lookup, &table, &obj_pc) && table) row = table->find(obj_pc);
        Frame next;
        Step st;
        if (row) {
            st = step_cfi(*table, *row, cur, mem, next);
            signal = row->flags & kSignalFrame;
            if (st == Step::Ok) s.cfi_frames++;
        } else {
            st = step_fp(cur, mem, next);
            signal = false;
            if (st == Step::Ok) s.fp_frames++;
        }
        if (st == Step::Ok) {
            const uint64_t ra = next.regs[kRa];
            // The stack grows down: a caller's frame is above. A signal frame may switch
            // stacks (sigaltstack), so it alone may go anywhere; the frame limit bounds it.
            if (ra == 0) break;
            // Not a user address: a garbage word (it could even pass for a context marker).
            if (ra >> 63) {
                s.broken++;
                break;
            }
            if (!signal && next.regs[kRsp] <= cur.regs[kRsp]) {
                s.broken++;
                break;
            }
            if (n + 1 >= max) {  // room for the marker only: it replaces the last frame at max 1
                out[n < max ? n++ : n - 1] = kChainTruncated;
                s.truncated++;
                break;
            }
            out[n++] = ra;
            cur = next;
            exact = signal;  // the pc a signal frame returns to was interrupted, not called from
            continue;
        }
        if (st == Step::Truncated) {
            if (n < max) {
                out[n++] = kChainTruncated;
            } else {
                out[n - 1] = kChainTruncated;
            }
            s.truncated++;
        } else if (st == Step::Broken) {
            s.broken++;
        }
        break;
    }
    for (size_t i = 0; i < n; i++) s.frames += out[i] != kChainTruncated;
    return n;
}

}  // namespace perfprof::unwind
