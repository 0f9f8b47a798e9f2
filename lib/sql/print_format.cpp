#include "sql/print_format.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>

extern "C" {
#include <event-parse.h>
}

namespace perfprof::sql {

std::vector<std::string> conversions(std::string_view fmt) {
    std::vector<std::string> out;
    size_t i = 0;
    const size_t n = fmt.size();
    while (i < n) {
        if (fmt[i++] != '%') continue;
        if (i < n && fmt[i] == '%') {
            ++i;
            continue;
        }
        // flags, width, precision, length; '*' takes an argument.
        while (i < n && std::strchr("-+ #0123456789.*hlLqjzt", fmt[i]) && fmt[i] != '\0') {
            if (fmt[i] == '*') out.emplace_back("*");
            ++i;
        }
        size_t start = i;
        // The length modifiers belong to the conversion text ("llx"): step back over them.
        while (start > 0 && std::strchr("hlLqjzt", fmt[start - 1]) && fmt[start - 1] != '\0') --start;
        if (i >= n) break;
        std::string conv(fmt.substr(start, i - start + 1));
        const char c = fmt[i++];
        if (c == 'p')
            while (i < n && std::isalnum(static_cast<unsigned char>(fmt[i]))) conv += fmt[i++];
        out.push_back(std::move(conv));
    }
    return out;
}

namespace {

// The field a print argument reads directly (REC->f, (type)REC->f, REC->f & MASK).
const char* field_of(const tep_print_arg* a, uint64_t* mask) {
    while (a && a->type == TEP_PRINT_TYPE) a = a->typecast.item;
    if (!a) return nullptr;
    if (a->type == TEP_PRINT_FIELD) return a->field.name;
    if (a->type == TEP_PRINT_OP && a->op.op && std::string_view(a->op.op) == "&" && a->op.right &&
        a->op.right->type == TEP_PRINT_ATOM && mask) {
        const char* f = field_of(a->op.left, nullptr);
        if (f) *mask = std::strtoull(a->op.right->atom.atom, nullptr, 0);
        return f;
    }
    return nullptr;
}

// `REC->isa == N`: N, else -1.
int isa_condition(const tep_print_arg* a) {
    if (!a || a->type != TEP_PRINT_OP || !a->op.op || std::string_view(a->op.op) != "==") return -1;
    const char* f = field_of(a->op.left, nullptr);
    if (!f || std::string_view(f) != "isa" || !a->op.right || a->op.right->type != TEP_PRINT_ATOM) return -1;
    return std::atoi(a->op.right->atom.atom);
}

void collect(const tep_print_arg* a, int isa, PrintInfo& info, int depth) {
    if (!a || depth > 64) return;
    switch (a->type) {
        case TEP_PRINT_SYMBOL: {
            Symbolic s;
            const char* f = field_of(a->symbol.field, &s.mask);
            if (!f) break;
            s.field = f;
            for (const tep_print_flag_sym* sym = a->symbol.symbols; sym; sym = sym->next)
                if (sym->value && sym->str) s.names.emplace(std::strtoll(sym->value, nullptr, 0), sym->str);
            // Several tables of one field (both branches of a ?:) merge into the first.
            for (Symbolic& old : info.symbolic)
                if (old.field == s.field) {
                    old.names.merge(s.names);
                    return;
                }
            info.symbolic.push_back(std::move(s));
            break;
        }
        case TEP_PRINT_OP: {
            const std::string_view op = a->op.op ? a->op.op : "";
            if (op == "?" && a->op.right && a->op.right->type == TEP_PRINT_OP) {
                const int want = isa_condition(a->op.left);
                const tep_print_arg* branches = a->op.right;
                if (want >= 0 && isa > 0) {
                    collect(want == isa ? branches->op.left : branches->op.right, isa, info, depth + 1);
                    return;
                }
            }
            collect(a->op.left, isa, info, depth + 1);
            collect(a->op.right, isa, info, depth + 1);
            break;
        }
        case TEP_PRINT_TYPE:
            collect(a->typecast.item, isa, info, depth + 1);
            break;
        case TEP_PRINT_FLAGS:
            collect(a->flags.field, isa, info, depth + 1);
            break;
        default:
            break;
    }
}

}  // namespace

PrintInfo print_info(const tep_event& ev, int isa) {
    PrintInfo info;
    const std::vector<std::string> convs = conversions(ev.print_fmt.format ? ev.print_fmt.format : "");
    size_t i = 0;
    for (const tep_print_arg* a = ev.print_fmt.args; a; a = a->next) {
        // A "*" entry is the width argument of the next conversion, not a field's.
        if (const char* f = field_of(a, nullptr); f && i < convs.size() && convs[i] != "*")
            info.conv.emplace(f, convs[i]);
        collect(a, isa, info, 0);
        ++i;
    }
    return info;
}

int machine_isa() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("vendor_id", 0) == 0) {
            if (line.find("AuthenticAMD") != std::string::npos ||
                line.find("HygonGenuine") != std::string::npos)
                return 2;
            return 1;
        }
    return 1;
}

}  // namespace perfprof::sql
