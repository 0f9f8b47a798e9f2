// libFuzzer target for the expression language (filter/expr.h, SPEC §2.7).
//
// Input: EXPR [ '\0' RECORD ]. A leading 0x01 byte compiles EXPR with CompileOptions::key_only.
// EXPR is compiled against a fixed sched_switch-like field table. perfprof::Error (CompileError)
// is an expected outcome; anything else (crash, sanitizer report, hang, other exception) is a
// finding. When EXPR compiles and passes the safety gate below, it is evaluated on RECORD (the
// bytes after the first NUL, any length, even empty) or, without a NUL, on a fixed record.
//
// Why a gate: the language is C with raw pointers by design (casts to pointer types, `*`, `[]`,
// pointer arithmetic, system()). `*(char *)0` is a valid program
// that must crash, exactly as in C, so evaluating arbitrary programs would only rediscover that.
// The gate is a conservative token-level check that lets through the programs whose every
// pointer is valid by construction; the evaluator must handle those without any sanitizer
// report, whatever the record bytes are. It never lets system() run. printf() needs no gate of
// its own: its format is checked against its arguments when compiled (printf_format.h), and a
// `char *` the gate lets through is a valid string.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "filter/expr.h"
#include "perf-prof/error.h"

using perfprof::filter::Field;

namespace {

// sched_switch as the kernel describes it, plus an int array and a __data_loc string:
//   0 u16 common_type; 2 u8 common_flags; 3 u8 common_preempt_count; 4 s32 common_pid;
//   8 char prev_comm[16]; 24 int prev_pid; 28 int prev_prio; 32 long prev_state;
//   40 char next_comm[16]; 56 int next_pid; 60 int next_prio; 64 __data_loc char[] name;
//   68 int args[4]; 84.. dynamic data
const std::vector<Field> kFields = {
    {"common_type", 0, 2, false, false, false, 0, false},
    {"common_flags", 2, 1, false, false, false, 0, false},
    {"common_preempt_count", 3, 1, false, false, false, 0, false},
    {"common_pid", 4, 4, true, false, false, 0, false},
    {"prev_comm", 8, 16, true, true, false, 1, true},
    {"prev_pid", 24, 4, true, false, false, 0, false},
    {"prev_prio", 28, 4, true, false, false, 0, false},
    {"prev_state", 32, 8, true, false, false, 0, false},
    {"next_comm", 40, 16, true, true, false, 1, true},
    {"next_pid", 56, 4, true, false, false, 0, false},
    {"next_prio", 60, 4, true, false, false, 0, false},
    {"name", 64, 4, true, true, true, 1, true},
    {"args", 68, 16, true, false, false, 4, true},
};

struct ArrayInfo {
    const char* name;
    uint64_t count;
};
// Names that denote a valid pointer (arrays and the __data_loc string) and their element count.
const ArrayInfo kArrays[] = {{"prev_comm", 16}, {"next_comm", 16}, {"args", 4}, {"name", 1}};

// The kernel NUL-terminates comm arrays (they are copies of task->comm); records given by the
// fuzzer get the same guarantee, so a missing NUL is not reported as an evaluator bug.
const uint32_t kCommEnds[] = {8 + 15, 40 + 15};

std::vector<uint8_t> default_record() {
    std::vector<uint8_t> r(96, 0);
    auto put = [&](size_t off, const void* p, size_t n) { std::memcpy(r.data() + off, p, n); };
    uint16_t type = 316;
    int32_t pid = 1234, prev_pid = 1234, prev_prio = 120, next_pid = 0, next_prio = 120;
    int64_t state = 1;
    put(0, &type, 2);
    r[2] = 0x81;
    r[3] = 1;
    put(4, &pid, 4);
    put(8, "bash", 5);
    put(24, &prev_pid, 4);
    put(28, &prev_prio, 4);
    put(32, &state, 8);
    put(40, "swapper/0", 10);
    put(56, &next_pid, 4);
    put(60, &next_prio, 4);
    const char dyn[] = "kworker/0:1";
    uint32_t loc = (uint32_t(sizeof dyn) << 16) | 84;
    put(64, &loc, 4);
    for (int32_t i = 0; i < 4; ++i) put(68 + 4 * size_t(i), &i, 4);
    put(84, dyn, sizeof dyn);
    return r;
}

const char* hook_ksymbol(uint64_t addr, void*) {
    return addr & 1 ? "schedule" : nullptr;
}
const char* hook_comm(int pid, void*) {
    return pid == 1234 ? "bash" : nullptr;
}
const char* hook_syscall(int64_t id, void*) {
    return id == 0 ? "read" : nullptr;
}

// ---- the safety gate ----

struct Tok {
    enum Kind { Num, Str, Ident, Punct } kind;
    std::string text;  // decoded for Str
};

// The compiler's lexer rules (§2.7.1/§2.7.2), for a source that already compiled.
std::vector<Tok> lex(std::string_view s) {
    std::vector<Tok> out;
    size_t i = 0;
    auto lit_char = [&](size_t& j) {
        char c = s[j++];
        if (c == '\\' && j < s.size()) {
            c = s[j++];
            if (c == 'n') c = '\n';
        }
        return c;
    };
    while (i < s.size()) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ++i;
        } else if (c == '#' || (c == '/' && i + 1 < s.size() && s[i + 1] == '/')) {
            while (i < s.size() && s[i] != '\n') ++i;
        } else if (c >= '0' && c <= '9') {
            size_t j = i;
            while (j < s.size() && std::isalnum((unsigned char)s[j])) ++j;
            out.push_back({Tok::Num, std::string(s.substr(i, j - i))});
            i = j;
        } else if (std::isalpha((unsigned char)c) || c == '_') {
            size_t j = i;
            while (j < s.size() && (std::isalnum((unsigned char)s[j]) || s[j] == '_')) ++j;
            out.push_back({Tok::Ident, std::string(s.substr(i, j - i))});
            i = j;
        } else if (c == '\'') {
            size_t j = i + 1;
            lit_char(j);
            out.push_back({Tok::Num, "0"});
            i = j + 1;
        } else if (c == '"') {
            size_t j = i + 1;
            std::string v;
            while (j < s.size() && s[j] != '"') v += lit_char(j);
            out.push_back({Tok::Str, v});
            i = j + 1;
        } else {
            static const char* const two[] = {"++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
            std::string t(1, c);
            for (const char* p : two)
                if (s.substr(i, 2) == p) t = p;
            out.push_back({Tok::Punct, t});
            i += t.size();
        }
    }
    return out;
}

bool is_type_word(const Tok& t) {
    return t.kind == Tok::Ident && (t.text == "char" || t.text == "short" || t.text == "int" ||
                                    t.text == "long" || t.text == "unsigned");
}
bool is_punct(const Tok& t, const char* p) {
    return t.kind == Tok::Punct && t.text == p;
}
const ArrayInfo* array_of(const Tok& t) {
    if (t.kind != Tok::Ident) return nullptr;
    for (const ArrayInfo& a : kArrays)
        if (t.text == a.name) return &a;
    return nullptr;
}
bool returns_pointer(const Tok& t) {
    return t.kind == Tok::Ident && (t.text == "ksymbol" || t.text == "comm_get" || t.text == "syscall_name" ||
                                    t.text == "exit_reason_str");
}
// Is token k the `)` of a cast, `(TYPE)` or `(TYPE *…)`?
bool closes_cast(const std::vector<Tok>& t, size_t k) {
    if (!is_punct(t[k], ")")) return false;
    while (k > 0 && is_punct(t[k - 1], "*")) --k;
    return k > 0 && is_type_word(t[k - 1]);
}
// Does token k end an operand (so a following `*`, `&`, `+`, `-` is binary)? A `)` closing a
// cast also counts: the operand after a cast is converted to a non-pointer type (pointer casts
// are refused separately), so treating its `*`/`&` as binary is harmless.
bool ends_operand(const std::vector<Tok>& t, size_t k) {
    const Tok& x = t[k];
    if (x.kind == Tok::Num || x.kind == Tok::Str) return true;
    if (x.kind == Tok::Ident) return !is_type_word(x) && x.text != "sizeof";
    // `++`/`--` end an operand only as postfix operators, i.e. right after an operand, and a
    // cast is no operand: in `(char)++*"abc"` the `*` is a dereference (a write into a literal).
    if (x.text == "++" || x.text == "--") return k > 0 && ends_operand(t, k - 1) && !closes_cast(t, k - 1);
    return x.text == ")" || x.text == "]";
}

bool safe_to_eval(std::string_view src) {
    std::vector<Tok> t = lex(src);
    bool pointer_source = false, has_deref = false, has_write = false, has_addsub = false, has_cond = false;
    for (size_t k = 0; k < t.size(); ++k) {
        const Tok& x = t[k];
        bool unary_pos = k == 0 || !ends_operand(t, k - 1);
        if (x.kind == Tok::Ident && x.text == "system") return false;  // never run a shell
        if (x.kind == Tok::Str || array_of(x) || returns_pointer(x)) pointer_source = true;
        if (is_punct(x, "*")) {
            // A `*` after a type word or a type's `*` makes a pointer type: a cast can forge any
            // address. (sizeof(T *) is harmless but refused with it.)
            if (k > 0 && (is_type_word(t[k - 1]) || (is_punct(t[k - 1], "*") && unary_pos))) return false;
            if (unary_pos) has_deref = true;
        }
        if (is_punct(x, "&") && unary_pos) pointer_source = true;
        if (is_punct(x, "=") || is_punct(x, "++") || is_punct(x, "--")) has_write = true;
        if ((is_punct(x, "+") || is_punct(x, "-")) && !unary_pos) has_addsub = true;
        if (is_punct(x, "+") && unary_pos) return false;  // `+p` keeps a pointer; keep it simple
        if (is_punct(x, "[")) {
            // Only ARRAY[N] / "literal"[N] with N in bounds.
            if (k == 0 || k + 2 >= t.size() || t[k + 1].kind != Tok::Num || !is_punct(t[k + 2], "]"))
                return false;
            uint64_t n = std::strtoull(t[k + 1].text.c_str(), nullptr, 0);
            size_t b = k - 1;
            // Adjacent literals: the compiler keeps the first and skips the rest (§2.7.2).
            while (t[b].kind == Tok::Str && b > 0 && t[b - 1].kind == Tok::Str) --b;
            uint64_t count = 0;
            if (t[b].kind == Tok::Str) {
                count = t[b].text.size() + 1;
                has_deref = true;  // a literal's bytes belong to the program: no writes into them
            } else if (const ArrayInfo* a = array_of(t[b])) {
                count = a->count;
            }
            if (n >= count) return false;
        }
        if (is_punct(x, "?")) has_cond = true;
    }
    // Pointer arithmetic can leave the object; without type information, any + or - in a program
    // that holds a pointer is treated as pointer arithmetic.
    if (pointer_source && has_addsub) return false;
    // Writes through a dereference could target string literals or hook results.
    if (has_deref && has_write) return false;
    // `c ? int_ptr : char_ptr` takes the first branch's type without complaint (C would refuse
    // it), so a conditional can retype a pointer: reading an int from a 1-byte string, or
    // strcmp() over an int array that has no NUL.
    if (pointer_source && has_cond) return false;
    return true;
}

// EXPR_FUZZ_STATS=1: print how many inputs compiled and how many of those were evaluated, to
// see whether the gate leaves the evaluator enough to chew on.
struct Stats {
    unsigned long inputs = 0, compiled = 0, evaluated = 0;
    ~Stats() {
        if (std::getenv("EXPR_FUZZ_STATS"))
            std::fprintf(stderr, "expr_fuzz: %lu inputs, %lu compiled, %lu evaluated\n", inputs, compiled,
                         evaluated);
    }
} stats;

FILE* devnull() {
    static FILE* f = std::fopen("/dev/null", "w");
    return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    ++stats.inputs;
    perfprof::filter::CompileOptions opts;
    if (!in.empty() && in[0] == '\x01') {
        opts.key_only = true;
        in.remove_prefix(1);
    }
    size_t nul = in.find('\0');
    std::string_view src = in.substr(0, nul);

    perfprof::filter::Program prog;
    try {
        prog = perfprof::filter::compile(src, kFields, opts);
    } catch (const perfprof::filter::CompileError& e) {
        // The diagnostics must point inside the source and carry the caret line.
        if (e.diagnostics().find("^ ") == std::string::npos) std::abort();
        return 0;
    } catch (const perfprof::Error&) {
        return 0;
    }
    if (prog.source() != src) std::abort();
    ++stats.compiled;
    if (!safe_to_eval(src)) return 0;
    ++stats.evaluated;

    static const std::vector<uint8_t> fixed = default_record();
    // An exactly sized heap copy, so ASan sees any read past the record's end.
    std::vector<uint8_t> rec;
    if (nul == std::string_view::npos) {
        rec = fixed;
    } else {
        std::string_view r = in.substr(nul + 1);
        rec.assign(r.begin(), r.end());
        for (uint32_t end : kCommEnds)
            if (end < rec.size()) rec[end] = 0;
    }
    uint8_t* buf = static_cast<uint8_t*>(std::malloc(rec.size() ? rec.size() : 1));
    if (!rec.empty()) std::memcpy(buf, rec.data(), rec.size());

    static const perfprof::filter::EvalHooks hooks{hook_ksymbol, hook_comm, hook_syscall, nullptr};
    perfprof::filter::EvalContext ctx;
    ctx.data = rec.empty() ? nullptr : buf;
    ctx.size = uint32_t(rec.size());
    ctx.cpu = 1;
    ctx.pid = 1234;
    ctx.key = 0xffffffff81000000ull;
    ctx.out = devnull();
    ctx.hooks = size & 1 ? &hooks : nullptr;  // both the hook and the fallback paths
    try {
        // Twice: the second run reuses the warm scratch buffer and must give the same result
        // unless the program has side effects on its private copy (it starts fresh each time).
        perfprof::filter::Value v1 = prog.eval(ctx);
        perfprof::filter::Value v2 = prog.eval(ctx);
        if (v1 != v2 && src.find("printf") == std::string_view::npos) std::abort();
    } catch (const perfprof::Error&) {
    }
    std::free(buf);
    return 0;
}
