// Evaluator of SPEC §2.7 programs (see expr.h) and the `~` glob matcher.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "filter/expr.h"

namespace perfprof::filter {

using detail::Fn;
using detail::Node;
using detail::Op;
using detail::Type;

bool glob_match(const char* p, const char* s) {
    // Iterative with one backtrack point for the last '*': linear-ish, no recursion depth issue.
    const char* star_p = nullptr;
    const char* star_s = nullptr;
    while (true) {
        if (*p == '*') {
            star_p = ++p;
            star_s = s;
            continue;
        }
        if (*s == '\0') {
            while (*p == '*') ++p;
            return *p == '\0';
        }
        bool ok = false;
        const char* next = p + 1;
        if (*p == '?') {
            ok = true;
        } else if (*p == '[') {
            const char* q = p + 1;
            bool neg = (*q == '^' || *q == '!');
            if (neg) ++q;
            bool hit = false;
            bool first = true;
            // A ']' right after '[' (or the negation) is a literal member, as in fnmatch.
            while (*q && (*q != ']' || first)) {
                first = false;
                if (q[1] == '-' && q[2] && q[2] != ']') {
                    if ((unsigned char)*s >= (unsigned char)q[0] && (unsigned char)*s <= (unsigned char)q[2])
                        hit = true;
                    q += 3;
                } else {
                    if (*q == *s) hit = true;
                    ++q;
                }
            }
            if (*q == ']') {
                ok = hit != neg;
                next = q + 1;
            } else {
                ok = (*s == '[');  // unterminated class: '[' is a literal
            }
        } else {
            ok = (*p == *s) && *p != '\0';
        }
        if (ok) {
            p = next;
            ++s;
            continue;
        }
        if (!star_p) return false;
        p = star_p;
        s = ++star_s;
    }
}

struct Program::State {
    uint8_t* base;  // record bytes (the real record, or the private copy)
    uint32_t size;
    const EvalContext* ctx;
};

namespace {

int64_t load(const uint8_t* p, Type t) {
    if (t.ptr) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return int64_t(v);
    }
    switch (t.size) {
        case 1:
            return t.is_unsigned ? int64_t(*p) : int64_t(int8_t(*p));
        case 2: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return t.is_unsigned ? int64_t(v) : int64_t(int16_t(v));
        }
        case 4: {
            uint32_t v;
            std::memcpy(&v, p, 4);
            return t.is_unsigned ? int64_t(v) : int64_t(int32_t(v));
        }
        default: {
            uint64_t v;
            std::memcpy(&v, p, 8);
            return int64_t(v);
        }
    }
}

// Truncate to the type's width and re-extend: what a store followed by a load yields.
int64_t convert(int64_t v, Type t) {
    if (t.ptr || t.size == 8) return v;
    uint8_t b[8];
    std::memcpy(b, &v, 8);  // little-endian hosts only (x86_64/arm64), as is the record layout
    return load(b, t);
}

void store(uint8_t* p, Type t, int64_t v) {
    std::memcpy(p, &v, t.ptr ? 8 : t.size);
}

const char* cstr(int64_t v) {
    return v ? reinterpret_cast<const char*>(uintptr_t(v)) : "";
}
int64_t ptr_val(const void* p) {
    return int64_t(reinterpret_cast<uintptr_t>(p));
}

const char kEmpty[] = "";

// The data a __data_loc field's u32 (at n.imm) points to. A loc pointing outside the record, or
// a string without its NUL, reads as "".
const void* dyn_target(const uint8_t* base, uint32_t size, const Node& n) {
    uint32_t loc;
    std::memcpy(&loc, base + n.imm, 4);
    uint32_t off = loc & 0xffff, len = loc >> 16;
    if (uint64_t(off) + len > size) return kEmpty;
    if (n.dyn_string && (len == 0 || base[off + len - 1] != 0)) return kEmpty;
    return base + off;
}

// Defined, non-trapping results: x/0 = 0, x%0 = 0, INT64_MIN/-1 wraps, INT64_MIN%-1 = 0.
int64_t div_mod(bool div, bool uns, int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (uns) return int64_t(div ? uint64_t(a) / uint64_t(b) : uint64_t(a) % uint64_t(b));
    if (b == -1) return div ? int64_t(0 - uint64_t(a)) : 0;
    return div ? a / b : a % b;
}

}  // namespace

uint8_t* Program::addr(int32_t i, State& s) const {
    const Node& n = nodes_[i];
    if (n.op == Op::Cast) return addr(n.a, s);  // a cast lvalue: the variable under it
    if (n.op == Op::Var) return n.space ? reinterpret_cast<uint8_t*>(&regs_) + n.imm : s.base + n.imm;
    return reinterpret_cast<uint8_t*>(uintptr_t(ev(n.a, s)));  // Deref
}

int64_t Program::ev_node(int32_t i, State& s) const {
    const Node& n = nodes_[i];
    // Unsigned arithmetic everywhere: two's-complement wrap instead of signed-overflow UB.
    auto A = [&] { return ev(n.a, s); };
    auto B = [&] { return ev(n.b, s); };
    switch (n.op) {
        case Op::Imm:
            return n.imm;
        case Op::Str:
            return ptr_val(strings_[size_t(n.imm)].c_str());
        case Op::Var:
        case Op::Deref:
            return load(addr(i, s), n.type);
        case Op::ArrayAddr:
            return ptr_val(s.base + n.imm);
        case Op::DynAddr:
            return ptr_val(dyn_target(s.base, s.size, n));
        case Op::AddrOf:
            return ptr_val(addr(n.a, s));
        case Op::Assign:
        case Op::PreInc:
        case Op::PostInc:
            return write(n, s);
        case Op::Cast:
            return convert(A(), n.type);
        case Op::Neg:
            return int64_t(0 - uint64_t(A()));
        case Op::Not:
            return !A();
        case Op::BitNot:
            return ~A();
        case Op::Mul:
            return int64_t(uint64_t(A()) * uint64_t(B()));
        case Op::Div:
        case Op::Mod: {
            int64_t a = A();
            return div_mod(n.op == Op::Div, n.uns, a, B());
        }
        case Op::Add:
            return int64_t(uint64_t(A()) + uint64_t(B()) * uint64_t(n.imm));
        case Op::Sub:
            return int64_t(uint64_t(A()) - uint64_t(B()) * uint64_t(n.imm));
        case Op::PtrDiff:
            return (A() - B()) / n.imm;
        // Shift counts are taken modulo 64 (x86 behaviour) rather than UB.
        case Op::Shl: {
            int64_t a = A();
            return int64_t(uint64_t(a) << (B() & 63));
        }
        case Op::Shr: {
            int64_t a = A();
            int sh = int(B() & 63);
            return n.uns ? int64_t(uint64_t(a) >> sh) : a >> sh;
        }
        case Op::Lt: {
            int64_t a = A(), b = B();
            return n.uns ? uint64_t(a) < uint64_t(b) : a < b;
        }
        case Op::Le: {
            int64_t a = A(), b = B();
            return n.uns ? uint64_t(a) <= uint64_t(b) : a <= b;
        }
        case Op::Gt: {
            int64_t a = A(), b = B();
            return n.uns ? uint64_t(a) > uint64_t(b) : a > b;
        }
        case Op::Ge: {
            int64_t a = A(), b = B();
            return n.uns ? uint64_t(a) >= uint64_t(b) : a >= b;
        }
        case Op::Eq: {
            int64_t a = A();
            return a == B();
        }
        case Op::Ne: {
            int64_t a = A();
            return a != B();
        }
        case Op::StrEq: {
            int64_t a = A();
            return std::strcmp(cstr(a), cstr(B())) == 0;
        }
        case Op::StrNe: {
            int64_t a = A();
            return std::strcmp(cstr(a), cstr(B())) != 0;
        }
        case Op::Glob: {
            int64_t a = A();
            return glob_match(cstr(B()), cstr(a));
        }
        case Op::BitAnd: {
            int64_t a = A();
            return a & B();
        }
        case Op::Xor: {
            int64_t a = A();
            return a ^ B();
        }
        case Op::BitOr: {
            int64_t a = A();
            return a | B();
        }
        case Op::LAnd:
            return A() && B();
        case Op::LOr:
            return A() || B();
        case Op::Cond:
            return ev(n.a, s) ? ev(n.b, s) : ev(n.c, s);
        case Op::Comma:
            A();
            return B();
        case Op::Call:
            return call(n, s);
    }
    return 0;
}

int64_t Program::write(const Node& n, State& s) const {
    // The stored width is the variable's own; under a cast the value is computed in the cast's type.
    int32_t base = n.a;
    while (nodes_[base].op == Op::Cast) base = nodes_[base].a;
    Type bt = nodes_[base].type;
    uint8_t* p = addr(base, s);
    if (n.op == Op::Assign) {
        int64_t v = convert(ev(n.b, s), n.type);
        store(p, bt, v);
        return v;
    }
    // PreInc, PostInc (-- is an increment by -1)
    int64_t old = convert(load(p, bt), n.type);
    int64_t v = convert(int64_t(uint64_t(old) + uint64_t(n.imm)), n.type);
    store(p, bt, v);
    return n.op == Op::PreInc ? v : old;
}

int64_t Program::call(const Node& n, State& s) const {
    int64_t v[7] = {0, 0, 0, 0, 0, 0, 0};
    for (int64_t k = 0; k < n.imm; ++k) v[k] = ev(args_[size_t(n.a + k)], s);
    const EvalHooks* h = s.ctx->hooks;
    switch (n.fn) {
        case Fn::Printf: {
            FILE* out = s.ctx->out ? s.ctx->out : stdout;
            return printf_format::format(formats_[size_t(n.b)], std::span(v + 1, size_t(n.imm - 1)), out);
        }
        case Fn::System: {
            char cmd[4096];
            int len = printf_format::format(formats_[size_t(n.b)], std::span(v + 1, size_t(n.imm - 1)), cmd,
                                            sizeof cmd);
            if (len < 0 || size_t(len) >= sizeof cmd) return -1;
            std::fflush(nullptr);  // keep our buffered output ahead of the child's
            return std::system(cmd);
        }
        case Fn::Ksymbol: {
            const char* r = h && h->ksymbol ? h->ksymbol(uint64_t(v[0]), h->user) : nullptr;
            return ptr_val(r ? r : "Unknown");
        }
        case Fn::CommGet: {
            const char* r = h && h->comm_get ? h->comm_get(int(v[0]), h->user) : nullptr;
            return ptr_val(r ? r : "<...>");
        }
        case Fn::SyscallName: {
            const char* r = h && h->syscall_name ? h->syscall_name(v[0], h->user) : nullptr;
            return ptr_val(r ? r : "Unknown");
        }
        case Fn::ExitReason:
            return ptr_val("Unknown");
        case Fn::Ntohl:
            return int32_t(__builtin_bswap32(uint32_t(v[0])));
        case Fn::Ntohs:
            return int16_t(__builtin_bswap16(uint16_t(v[0])));
        case Fn::Strncmp:
            return std::strncmp(cstr(v[0]), cstr(v[1]), size_t(v[2]));
    }
    return 0;
}

Value Program::eval(const EvalContext& ctx) const {
    if (nodes_.empty()) return 0;  // a default-constructed Program
    regs_.cpu = ctx.cpu;
    regs_.pid = ctx.pid;
    regs_.key = ctx.key;
    State s{const_cast<uint8_t*>(static_cast<const uint8_t*>(ctx.data)), ctx.size, &ctx};
    // Work on a private copy when the program writes, or when the record is shorter than the
    // fields it reads (zero padding instead of reading past the buffer). The copy also ends in a
    // NUL so a full-width char array still terminates. Capacity is kept: no allocation once warm.
    if (writes_ || ctx.size < min_size_ || !ctx.data) {
        size_t need = std::max<size_t>(ctx.size, min_size_) + 1;
        if (scratch_.size() < need) scratch_.resize(need);
        if (ctx.size && ctx.data) std::memcpy(scratch_.data(), ctx.data, ctx.size);
        std::memset(scratch_.data() + ctx.size, 0, scratch_.size() - ctx.size);
        s.base = scratch_.data();
    }
    return ev(root_, s);
}

}  // namespace perfprof::filter
