// The expression language of SPEC §2.7 (filter fallback, key=, role=, exec=, printkey=…).
//
// compile() parses once into a flat tree of pre-resolved nodes (field offsets, load widths,
// signedness, pointer scales are all decided at compile time); Program::eval() walks it with a
// switch and never allocates for numeric expressions. Fields come from a plain table so this
// component does not depend on libtraceevent.
//
// Errors: compile() throws CompileError, a perfprof::Error of Kind::Usage whose what() is the
// short "{message} at column N". The §2.7.8 block that belongs on stdout (source, caret line,
// "Available variables:" list) is CompileError::diagnostics(); the caller prints it, this
// component never writes to stdout on its own.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter/printf_format.h"
#include "perf-prof/error.h"
#include "perf-prof/field.h"
#include "perf-prof/sample.h"

namespace perfprof::filter {

// One field of a tracepoint format (include/perf-prof/field.h, the bottom layer).
using Field = perfprof::Field;

// Every value is a 64-bit integer; pointers (char * results) are addresses.
using Value = int64_t;

// Services that live elsewhere in the binary (kallsyms, the pid→comm table, syscall table).
// A null hook gives the SPEC's fallback text ("Unknown", "<...>").
struct EvalHooks {
    const char* (*ksymbol)(uint64_t addr, void* user) = nullptr;
    const char* (*comm_get)(int pid, void* user) = nullptr;
    const char* (*syscall_name)(int64_t id, void* user) = nullptr;
    void* user = nullptr;
};

struct EvalContext {
    const void* data = nullptr;  // raw record bytes (the tracepoint's raw data)
    uint32_t size = 0;
    int cpu = -1;         // _cpu
    int pid = -1;         // _pid (tgid)
    uint64_t key = 0;     // `key`, only for CompileOptions::key_only programs
    FILE* out = nullptr;  // printf() destination; null = stdout
    const EvalHooks* hooks = nullptr;
};

// The context of one sample's record: its bytes, CPU and process.
inline EvalContext sample_context(const Sample& s, const EvalHooks* hooks, FILE* out = nullptr) {
    EvalContext c;
    c.data = s.raw;
    c.size = s.raw_size;
    c.cpu = int(s.cpu);
    c.pid = int(s.pid);
    c.out = out;
    c.hooks = hooks;
    return c;
}

struct CompileOptions {
    bool key_only = false;  // printkey=: the only variable is `key` (u64); fields are ignored
};

namespace detail {
// A C type of the language: char/short/int/long (size 1/2/4/8), signedness, pointer depth.
struct Type {
    uint8_t size = 8;
    bool is_unsigned = false;
    uint8_t ptr = 0;
};

enum class Op : uint8_t {
    Imm,
    Str,
    Var,
    ArrayAddr,
    DynAddr,
    Deref,
    AddrOf,
    Assign,
    PreInc,
    PostInc,
    Cast,
    Neg,
    Not,
    BitNot,
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    PtrDiff,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    StrEq,
    StrNe,
    Glob,
    BitAnd,
    Xor,
    BitOr,
    LAnd,
    LOr,
    Cond,
    Comma,
    Call,
};

enum class Fn : uint8_t { Printf, Ksymbol, Ntohl, Ntohs, Strncmp, CommGet, SyscallName, ExitReason, System };

struct Node {
    Op op = Op::Imm;
    Type type;
    uint8_t space = 0;  // Var: 0 = record, 1 = builtin registers
    Fn fn = Fn::Printf;
    bool uns = false;  // comparisons, / % >>: unsigned flavour
    bool dyn_string = false;
    int64_t imm = 0;                 // literal, field offset, pointer scale, string pool index, arg count
    int32_t a = -1, b = -1, c = -1;  // children; Call: a = first index into args_, b = format
    int32_t var = -1;                // a variable's row in Program::globals_ (the listing)
};
}  // namespace detail

class CompileError : public Error {
public:
    CompileError(std::string message, size_t column, std::string diagnostics)
        : Error(message + " at column " + std::to_string(column + 1), {}, Kind::Usage),
          message_(std::move(message)),
          column_(column),
          diagnostics_(std::move(diagnostics)) {}
    const std::string& message() const noexcept { return message_; }
    size_t column() const noexcept { return column_; }  // 0-based, within the error's line
    // SPEC §2.7.8 text, newline-terminated, for stdout.
    const std::string& diagnostics() const noexcept { return diagnostics_; }

private:
    std::string message_;
    size_t column_;
    std::string diagnostics_;
};

// Not safe for concurrent eval() of one Program: the private record copy (writes, short records)
// and the builtin-variable cells are per-Program scratch, reused so eval() does not allocate.
class Program {
public:
    Value eval(const EvalContext& ctx) const;
    bool result_is_string() const {
        return !nodes_.empty() && nodes_[root_].type.ptr == 1 && nodes_[root_].type.size == 1;
    }
    bool uses_ksymbol() const { return uses_ksymbol_; }  // the caller loads kallsyms only if true
    const std::string& source() const { return source_; }
    // The compiled program in our own IR notation, under upstream's three headings:
    // "Instruction:" (one node a line, children first), "Global variable:", "Strings:".
    std::string listing() const;
    // With a non-null `trace`, eval() prints each node it evaluates and its value there (-v).
    void set_trace(FILE* trace) { trace_ = trace; }

private:
    friend class Compiler;
    struct Regs {
        int32_t cpu = 0, pid = 0;
        uint64_t key = 0;
    };
    struct State;
    int64_t ev(int32_t i, State& s) const {
        int64_t v = ev_node(i, s);
        if (trace_) trace_node(i, v);
        return v;
    }
    int64_t ev_node(int32_t i, State& s) const;
    void trace_node(int32_t i, int64_t v) const;
    std::string node_text(int32_t i) const;
    uint8_t* addr(int32_t i, State& s) const;
    int64_t write(const detail::Node& n, State& s) const;  // =, ++, --
    int64_t call(const detail::Node& n, State& s) const;   // the builtin functions

    struct Global {
        std::string name, decl;
        uint8_t space;
        uint32_t offset;
    };
    std::string source_;
    std::vector<Global> globals_;  // the variables the program names, for the listing
    FILE* trace_ = nullptr;
    std::vector<detail::Node> nodes_;
    std::vector<int32_t> args_;
    std::deque<std::string> strings_;             // deque: c_str() stays put while literals are added
    std::vector<printf_format::Format> formats_;  // of printf() and system(), checked
    int32_t root_ = 0;
    uint32_t min_size_ = 0;  // bytes the referenced fields need; shorter records are padded
    bool writes_ = false;    // assignment/++/--/& present: evaluate on a private copy
    bool uses_ksymbol_ = false;
    mutable std::vector<uint8_t> scratch_;
    mutable Regs regs_;
};

// Throws CompileError (a perfprof::Error, Kind::Usage) on any compile error.
Program compile(std::string_view expr, std::span<const Field> fields, const CompileOptions& opts = {});

// Glob of SPEC §2.7.5 (`*`, `?`, `[..]`, `[^..]`/`[!..]`; whole string). Exposed for tests.
bool glob_match(const char* pattern, const char* str);

}  // namespace perfprof::filter
