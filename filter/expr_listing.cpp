// The listing of a compiled program and the -v evaluation trace (expr, SPEC-PROFILERS §P13).
// Our own IR notation: one node a line, children before their parent, as the tree evaluates.
#include <cinttypes>
#include <cstdio>

#include "filter/expr.h"

namespace perfprof::filter {

using detail::Fn;
using detail::Node;
using detail::Op;
using detail::Type;

namespace {

const char* op_name(Op op) {
    static const char* const names[] = {
        "IMM",  "STR", "LOAD", "ARRAY", "DATALOC", "DEREF", "ADDR", "ASSIGN", "PREINC", "POSTINC",
        "CAST", "NEG", "NOT",  "BNOT",  "MUL",     "DIV",   "MOD",  "ADD",    "SUB",    "PTRDIFF",
        "SHL",  "SHR", "LT",   "LE",    "GT",      "GE",    "EQ",   "NE",     "STREQ",  "STRNE",
        "GLOB", "AND", "XOR",  "OR",    "LAND",    "LOR",   "COND", "COMMA",  "CALL",
    };
    static_assert(sizeof names / sizeof names[0] == size_t(Op::Call) + 1);
    return names[size_t(op)];
}

const char* fn_name(Fn fn) {
    static const char* const names[] = {"printf",   "ksymbol",      "ntohl",           "ntohs", "strncmp",
                                        "comm_get", "syscall_name", "exit_reason_str", "system"};
    return names[size_t(fn)];
}

std::string type_text(Type t) {
    std::string s = t.is_unsigned ? "unsigned " : "";
    s += t.size == 1 ? "char" : t.size == 2 ? "short" : t.size == 4 ? "int" : "long";
    if (t.ptr) s += ' ' + std::string(t.ptr, '*');
    return s;
}

std::string ref(int32_t i) {
    return i < 0 ? std::string() : " %" + std::to_string(i);
}

}  // namespace

std::string Program::node_text(int32_t i) const {
    const Node& n = nodes_[size_t(i)];
    std::string s = "%" + std::to_string(i) + " = " + op_name(n.op);
    if (n.uns && n.op != Op::Var) s += ".u";
    s += " (" + type_text(n.type) + ")";
    switch (n.op) {
        case Op::Imm:
            s += " " + std::to_string(n.imm);
            break;
        case Op::Str:
            s += " @str" + std::to_string(n.imm);
            break;
        case Op::Var:
        case Op::ArrayAddr:
        case Op::DynAddr:
            if (n.var >= 0 && size_t(n.var) < globals_.size()) s += " @" + globals_[size_t(n.var)].name;
            break;
        case Op::Call:
            s += std::string(" ") + fn_name(n.fn) + "(";
            for (int64_t k = 0; k < n.imm; ++k) s += (k ? ", %" : "%") + std::to_string(args_[size_t(n.a + k)]);
            s += ")";
            break;
        default:
            s += ref(n.a) + ref(n.b) + ref(n.c);
            if ((n.op == Op::Add || n.op == Op::Sub || n.op == Op::PtrDiff) && n.imm != 1)
                s += " scale " + std::to_string(n.imm);
            if (n.op == Op::PreInc || n.op == Op::PostInc) s += " by " + std::to_string(n.imm);
            break;
    }
    return s;
}

std::string Program::listing() const {
    std::string s = "Instruction:\n";
    for (size_t i = 0; i < nodes_.size(); ++i) s += "    " + node_text(int32_t(i)) + "\n";
    if (!nodes_.empty()) s += "    RET %" + std::to_string(root_) + "\n";
    s += "Global variable:\n";
    for (const Global& g : globals_) {
        char where[48];
        std::snprintf(where, sizeof where, g.space ? "sample+%u" : "record+%u", unsigned(g.offset));
        s += "    " + g.decl + "  @" + where + "\n";
    }
    s += "Strings:\n";
    for (size_t k = 0; k < strings_.size(); ++k) {
        std::string esc;
        for (char c : strings_[k]) {
            if (c == '\n')
                esc += "\\n";
            else if (c == '"' || c == '\\')
                esc += std::string("\\") + c;
            else if ((unsigned char)c < 0x20 || c == 0x7f)
                esc += '.';
            else
                esc += c;
        }
        s += "    @str" + std::to_string(k) + " \"" + esc + "\"\n";
    }
    return s;
}

void Program::trace_node(int32_t i, int64_t v) const {
    std::fprintf(trace_, "    %s -> %" PRId64 " (0x%" PRIx64 ")\n", node_text(i).c_str(), v, uint64_t(v));
}

}  // namespace perfprof::filter
