#include "stack/stack_printer.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <vector>

#include "core/text.h"
#include "perf-prof/sample.h"

namespace perfprof::stack {

using flamegraph::FrameKind;

namespace {

constexpr const char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, uint64_t v, int width) {
    char buf[16];
    int n = 0;
    do {
        buf[n++] = kHex[v & 0xf];
        v >>= 4;
    } while (v);
    for (int i = n; i < width; i++) out += '0';
    while (n) out += buf[--n];
}

void append_off(std::string& out, uint64_t off) {
    out += "0x";
    append_hex(out, off, 0);
}

enum class Ctx { None, Kernel, User, Other };

Ctx context_of(uint64_t marker) {
    switch (marker) {
        case PERF_CONTEXT_KERNEL:
            return Ctx::Kernel;
        case PERF_CONTEXT_USER:
            return Ctx::User;
        default:
            return Ctx::Other;  // hypervisor and guest contexts: not symbolized
    }
}

}  // namespace

void Printer::prepare(uint32_t pid) {
    if (user_) syms_.prepare(pid);
}

Printer::Printer(sym::Symbolizer& symbols, bool kernel, bool user, int max_stack)
    : syms_(symbols), user_(user), max_stack_(max_stack) {
    if (kernel) ksyms_ = syms_.kernel();
}

FrameKind Printer::kernel_frame(uint64_t ip, std::string& out, bool bare, bool offset) {
    uint64_t off = 0;
    const char* name = ksyms_ ? ksyms_->find(ip, &off) : nullptr;
    out += name ? name : "Unknown";
    if (offset) {
        out += '+';
        append_off(out, name ? off : 0);
    }
    if (!bare) out += " ([kernel.kallsyms])";
    return name ? FrameKind::Kernel : FrameKind::Unknown;
}

FrameKind Printer::user_frame(uint32_t pid, uint64_t ip, std::string& out, bool bare, bool offset,
                              sym::Frame* resolved) {
    sym::Frame own;
    sym::Frame& f = resolved ? *resolved : own;
    f = sym::Frame{};
    const bool mapped = user_ && syms_.resolve(pid, ip, f) && f.dso;
    if (mapped && f.sym) {
        out += *f.sym;
        if (offset) {
            out += '+';
            append_off(out, f.offset);
        }
        const FrameKind kind = f.jit                            ? FrameKind::Jit
                               : core::is_shared_object(*f.dso) ? FrameKind::Library
                                                                : FrameKind::User;
        if (bare) return kind;
        out += " (";
        out += *f.dso;
        out += ')';
        return kind;
    } else if (mapped) {
        // No symbol: the file and offset still let a reader find the code (addr2line).
        out += '[';
        out += *f.dso;
        out += '+';
        append_off(out, f.dso_offset);
        out += ']';
        return FrameKind::Fallback;
    }
    out += "[unknown]";
    return FrameKind::Unknown;
}

void Printer::print(const uint64_t* ips, uint64_t nr, uint32_t pid, int max_stack, std::string& out) {
    Ctx ctx = Ctx::None;
    int frames = 0;
    bool cut = false;
    for (uint64_t i = 0; i < nr; i++) {
        const uint64_t ip = ips[i];
        if (ip == kChainTruncated) {
            cut = true;
            continue;
        }
        if (ip >= PERF_CONTEXT_MAX) {
            ctx = context_of(ip);
            continue;
        }
        frames++;
        out += "    ";
        append_hex(out, ip, 16);
        if (ctx == Ctx::Kernel) {
            out += ' ';
            kernel_frame(ip, out, false);
        } else if (ctx == Ctx::User) {
            out += ' ';
            user_frame(pid, ip, out, false);
        } else if (ctx == Ctx::Other) {
            out += " [unknown]";
        }
        out += '\n';
    }
    if (cut || (max_stack > 0 && frames >= max_stack)) out += "    [truncated]\n";
    if (frames == 0 && !cut) out += "    [no frame]\n";
}

void Printer::leaf_first(const uint64_t* ips, uint64_t nr, std::vector<ChainFrame>& out) {
    out.clear();
    size_t kernel = 0;  // kernel frames go first, in chain order, ahead of the rest
    Ctx ctx = Ctx::None;
    for (uint64_t i = 0; i < nr; i++) {
        if (ips[i] == kChainTruncated) {
            out.push_back({Context::Truncated, 0});
        } else if (ips[i] >= PERF_CONTEXT_MAX) {
            ctx = context_of(ips[i]);
        } else if (ctx == Ctx::Kernel) {
            out.insert(out.begin() + ptrdiff_t(kernel++), {Context::Kernel, ips[i]});
        } else {
            out.push_back({ctx == Ctx::User ? Context::User : Context::Other, ips[i]});
        }
    }
}

FrameKind Printer::folded_name(const ChainFrame& f, uint32_t pid, std::string& out, sym::Frame* resolved) {
    switch (f.ctx) {
        case Context::Kernel:
            return kernel_frame(f.ip, out, true, false);
        case Context::User:
            return user_frame(pid, f.ip, out, true, false, resolved);
        case Context::Truncated:
            out += "[truncated]";
            return FrameKind::Unknown;
        case Context::Other:
            break;
    }
    out += "Unknown";
    return FrameKind::Unknown;
}

bool Printer::fold(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string& out, std::string* kinds) {
    // Outermost first: the user part, then the kernel part.
    std::vector<ChainFrame> frames;
    frames.reserve(nr);
    leaf_first(ips, nr, frames);
    if (frames.empty()) return false;
    // Outermost first (std::views::reverse does not build with clang 14 over libstdc++ 12).
    std::for_each(frames.rbegin(), frames.rend(), [&](const ChainFrame& f) {
        const size_t first = out.size();
        const FrameKind kind = folded_name(f, pid, out);
        // A JIT's names may hold the separator (Java's "Lcom/Foo;.run").
        if (kind == FrameKind::Jit) std::replace(out.begin() + ptrdiff_t(first), out.end(), ';', ':');
        // The kinds a name does not show by itself, so that a redrawn file keeps its colours.
        out += flamegraph::kind_annotation(kind);
        out += ';';
        if (kinds) *kinds += static_cast<char>(kind);
    });
    return true;
}

bool Printer::frame_lines(const uint64_t* ips, uint64_t nr, uint32_t pid, std::string& out) {
    Ctx ctx = Ctx::None;
    bool any = false;
    for (uint64_t i = 0; i < nr; i++) {
        if (ips[i] == kChainTruncated) {
            out += "[truncated]\n";
            continue;
        }
        if (ips[i] >= PERF_CONTEXT_MAX) {
            ctx = context_of(ips[i]);
            continue;
        }
        any = true;
        if (ctx == Ctx::Kernel)
            kernel_frame(ips[i], out, true);
        else if (ctx == Ctx::User)
            user_frame(pid, ips[i], out, true);
        else
            out += "Unknown";
        out += '\n';
    }
    return any;
}

}  // namespace perfprof::stack
