#include "hw/hw_print.h"

#include <cinttypes>
#include <cstdio>

#include "core/format.h"
#include "sym/symbolizer.h"

namespace perfprof::hw {

namespace {

void append_hex(std::string& out, uint64_t v, int width) {
    char buf[24];
    const int n = std::snprintf(buf, sizeof(buf), "%0*" PRIx64, width, v);
    if (n > 0) out.append(buf, size_t(n));
}

}  // namespace

bool reg_value(uint64_t mask, const uint64_t* values, int reg, uint64_t& v) {
    v = 0;
    if (!values || reg < 0 || reg >= 64 || !(mask & (uint64_t(1) << reg))) return false;
    // The values come lowest bit first: the index is the number of mask bits below `reg`.
    const uint64_t below = mask & ((uint64_t(1) << reg) - 1);
    v = values[__builtin_popcountll(below)];
    return true;
}

void append_regs_block(uint64_t mask, const uint64_t* values, std::string& out) {
    if (!values) return;
    auto reg = [&](int r) {
        uint64_t v;
        reg_value(mask, values, r, v);
        return v;
    };
    auto cell = [&](const char* name, int r, int width) {
        out += name;
        append_hex(out, reg(r), width);
    };
    out += "      ";
    cell("RIP: ", kIP, 16);
    cell(" RSP: ", kSP, 16);
    cell(" RFLAGS:", kFLAGS, 8);
    out += '\n';
    static constexpr struct {
        const char* name;
        int reg;
    } kRows[5][3] = {
        {{"RAX: ", kAX}, {" RBX: ", kBX}, {" RCX: ", kCX}},
        {{"RDX: ", kDX}, {" RSI: ", kSI}, {" RDI: ", kDI}},
        {{"RBP: ", kBP}, {" R08: ", kR8}, {" R09: ", kR9}},
        {{"R10: ", kR10}, {" R11: ", kR11}, {" R12: ", kR12}},
        {{"R13: ", kR13}, {" R14: ", kR14}, {" R15: ", kR15}},
    };
    for (const auto& row : kRows) {
        out += "      ";
        for (const auto& c : row) cell(c.name, c.reg, 16);
        out += '\n';
    }
    out += "      ";
    cell("CS: ", kCS, 4);
    cell(" SS: ", kSS, 4);
    out += '\n';
}

void append_evts_t(uint64_t ns, std::string& out) {
    core::append_uint(out, ns / 1000000000ull);
    out += '.';
    core::append_uint(out, (ns % 1000000000ull) / 1000, 6, '0');
}

void append_head(Context& ctx, uint64_t time, uint32_t tid, uint32_t cpu, std::string& line,
                 std::string_view title) {
    if (!title.empty()) {
        line += title;
        if (title.size() < 26) line.append(26 - title.size(), ' ');
        line += "  ";  // the marker column titled lines have (output::append_line_head)
    } else {
        ctx.wall(time, line);
    }
    line += ' ';
    core::append_right(line, ctx.comm(tid).substr(0, 16), 16);
    line += ' ';
    core::append_uint(line, tid, 6);
    if (cpu == UINT32_MAX) {
        line += " [---] ";
    } else {
        line += " [";
        core::append_uint(line, cpu, 3, '0');
        line += "] ";
    }
    append_evts_t(time, line);
    line += ": ";
}

void append_ip(sym::Symbolizer& symbols, uint32_t pid, uint64_t ip, bool user_symbols, std::string& out) {
    char buf[32];
    if (kernel_address(ip)) {
        uint64_t off = 0;
        const char* name = symbols.kernel()->find(ip, &off);
        if (name) {
            out += name;
            std::snprintf(buf, sizeof(buf), "+0x%" PRIx64, off);
            out += buf;
            return;
        }
    } else if (user_symbols) {
        sym::Frame f;
        if (symbols.resolve(pid, ip, f) && f.sym) {
            out += *f.sym;
            std::snprintf(buf, sizeof(buf), "+0x%" PRIx64, f.offset);
            out += buf;
        } else {
            out += "Unknown";
        }
        return;
    }
    append_hex(out, ip, 16);
}

}  // namespace perfprof::hw
