// Compiler of SPEC §2.7: a precedence-climbing parser producing typed, pre-resolved nodes. Its
// tokens come from expr_lexer.cpp, its names from expr_vars.cpp; evaluation and glob matching
// live in expr_eval.cpp.
#include "filter/expr.h"

#include "filter/expr_lexer.h"
#include "filter/expr_vars.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace perfprof::filter {

using detail::Fn;
using detail::Node;
using detail::Op;
using detail::Type;

class Compiler : ExprLexer {
public:
    Compiler(std::string_view src, std::span<const Field> fields, const CompileOptions& opts)
        : ExprLexer(src), vars_(make_vars(fields, opts)) {
        prog_.source_ = std::string(src);
    }

    Program run() {
        try {
            next();
            int32_t root = parse_comma();
            if (tok_.kind != Tok::End) fail(tok_.pos, "unexpected '" + tok_.text + "'");
            prog_.root_ = root;
        } catch (const ExprLexer::Error& e) {
            fail(e.pos, e.msg);
        }
        return std::move(prog_);
    }

private:
    [[noreturn]] void fail(size_t pos, const std::string& msg) {
        size_t line_start = src_.rfind('\n', pos == 0 ? 0 : pos - 1);
        line_start = (line_start == std::string_view::npos || pos == 0) ? 0 : line_start + 1;
        size_t col = pos - line_start;
        std::string d(src_);
        if (d.empty() || d.back() != '\n') d += '\n';
        d += std::string(col, ' ') + "^ " + msg + "\nAvailable variables:\n";
        for (const VarInfo& v : vars_)
            if (v.space == 0 || v.name == "key") d += "     " + var_decl(v) + "\n";
        throw CompileError(msg, col, std::move(d));
    }

    // ---- limits ----
    // Parsing and eval() recurse over the expression: a command-line argument (up to 128 KiB) of
    // nested parentheses or of `1+1+…` would otherwise overflow the stack (found by
    // tests/fuzz/expr_fuzz). Both bounds are far beyond hand-written expressions.
    static constexpr int kMaxNesting = 1000;  // parser recursion: about 3 per parenthesis level
    static constexpr int kMaxDepth = 1000;    // tree height, i.e. eval() recursion
    struct Nest {
        Compiler& c;
        explicit Nest(Compiler& cc) : c(cc) {
            if (++c.nesting_ > kMaxNesting) c.fail(c.tok_.pos, "expression nested too deeply");
        }
        ~Nest() { --c.nesting_; }
    };

    // ---- node helpers ----
    int32_t add(Node n) {
        auto depth = [&](int32_t i) { return i >= 0 ? depth_[size_t(i)] : 0; };
        int d = 0;
        if (n.op == Op::Call) {
            for (int64_t k = 0; k < n.imm; ++k) d = std::max(d, depth(prog_.args_[size_t(n.a + k)]));
        } else {
            d = std::max({depth(n.a), depth(n.b), depth(n.c)});
        }
        if (d + 1 > kMaxDepth) fail(tok_.pos, "expression nested too deeply");
        depth_.push_back(d + 1);
        prog_.nodes_.push_back(n);
        return int32_t(prog_.nodes_.size() - 1);
    }
    const Node& N(int32_t i) const { return prog_.nodes_[i]; }
    Type T(int32_t i) const { return prog_.nodes_[i].type; }
    // A cast of an lvalue is one too (upstream's compiler kept the load under a cast): `++(unsigned)pid`
    // and `((int *)pid)++` compute in the cast's type and store back at the variable's own width.
    bool lvalue(const Node& n) const {
        return n.op == Op::Var || n.op == Op::Deref || (n.op == Op::Cast && lvalue(N(n.a)));
    }
    static uint32_t elem_size(Type t) { return t.ptr > 1 ? 8 : t.size; }  // t is a pointer
    int32_t imm(int64_t v, Type t = Type{4, false, 0}) {
        Node n;
        n.op = Op::Imm;
        n.imm = v;
        n.type = t;
        return add(n);
    }
    int32_t bin(Op op, int32_t a, int32_t b, Type t, bool uns = false, int64_t k = 0) {
        Node n;
        n.op = op;
        n.a = a;
        n.b = b;
        n.type = t;
        n.uns = uns;
        n.imm = k;
        return add(n);
    }

    // Is the current token the start of a type name (for casts and sizeof)?
    bool at_type() const {
        return tok_.kind == Tok::Ident &&
               (tok_.text == "char" || tok_.text == "short" || tok_.text == "int" || tok_.text == "long" ||
                tok_.text == "unsigned");
    }
    Type parse_type() {
        Type t{4, false, 0};
        if (tok_.text == "unsigned") {
            t.is_unsigned = true;
            next();
            if (!at_type()) goto stars;  // bare `unsigned` = unsigned int
        }
        if (tok_.text == "char")
            t.size = 1;
        else if (tok_.text == "short")
            t.size = 2;
        else if (tok_.text == "int")
            t.size = 4;
        else if (tok_.text == "long")
            t.size = 8;
        else
            fail(tok_.pos, "bad type");
        next();
    stars:
        while (is("*")) {
            t.ptr++;
            next();
        }
        return t;
    }

    // ---- parser, lowest precedence first ----
    int32_t parse_comma() {
        int32_t a = parse_assign();
        while (is(",")) {
            next();
            int32_t b = parse_assign();
            a = bin(Op::Comma, a, b, T(b));
        }
        return a;
    }
    int32_t parse_assign() {
        Nest nest(*this);
        size_t pos = tok_.pos;
        int32_t a = parse_cond();
        if (is("=")) {
            if (!lvalue(N(a))) fail(pos, "lvalue required in assignment");
            next();
            int32_t b = parse_assign();
            prog_.writes_ = true;
            return bin(Op::Assign, a, b, T(a));
        }
        return a;
    }
    int32_t parse_cond() {
        Nest nest(*this);
        int32_t c = parse_binary(12);
        if (!is("?")) return c;
        next();
        int32_t a = parse_comma();
        expect(":", " in conditional expression");
        int32_t b = parse_cond();
        Type t = T(a);
        if (!(T(a).ptr && T(b).ptr))
            t = Type{8, T(a).is_unsigned || T(b).is_unsigned || T(a).ptr || T(b).ptr, 0};
        Node n;
        n.op = Op::Cond;
        n.a = c;
        n.b = a;
        n.c = b;
        n.type = t;
        return add(n);
    }
    // Binary operator precedence levels of §2.7.5 (3 = * / % … 12 = ||); 0 = not binary.
    int level_of() const {
        if (tok_.kind != Tok::Punct) return 0;
        const std::string& s = tok_.text;
        if (s == "*" || s == "/" || s == "%") return 3;
        if (s == "+" || s == "-") return 4;
        if (s == "<<" || s == ">>") return 5;
        if (s == "<" || s == "<=" || s == ">" || s == ">=" || s == "~") return 6;
        if (s == "==" || s == "!=") return 7;
        if (s == "&") return 8;
        if (s == "^") return 9;
        if (s == "|") return 10;
        if (s == "&&") return 11;
        if (s == "||") return 12;
        return 0;
    }
    int32_t parse_binary(int level) {
        if (level < 3) return parse_unary();
        int32_t a = parse_binary(level - 1);
        while (level_of() == level) {
            std::string op = tok_.text;
            size_t pos = tok_.pos;
            next();
            int32_t b = parse_binary(level - 1);
            a = make_binary(op, pos, a, b);
        }
        return a;
    }
    int32_t make_binary(const std::string& op, size_t pos, int32_t a, int32_t b) {
        Type ta = T(a), tb = T(b);
        bool uns = ta.is_unsigned || tb.is_unsigned || ta.ptr || tb.ptr;
        Type lng{8, uns, 0};
        Type i32{4, false, 0};
        if (op == "+" || op == "-") {
            if (ta.ptr && tb.ptr) {
                if (op == "+") fail(pos, "invalid operands to binary +");
                return bin(Op::PtrDiff, a, b, Type{8, false, 0}, false, elem_size(ta));
            }
            if (tb.ptr && op == "+") std::swap(a, b), std::swap(ta, tb);
            if (ta.ptr) return bin(op == "+" ? Op::Add : Op::Sub, a, b, ta, false, elem_size(ta));
            return bin(op == "+" ? Op::Add : Op::Sub, a, b, lng, false, 1);
        }
        if (op == "*") return bin(Op::Mul, a, b, lng);
        if (op == "/") return bin(Op::Div, a, b, lng, uns);
        if (op == "%") return bin(Op::Mod, a, b, lng, uns);
        if (op == "<<") return bin(Op::Shl, a, b, lng);
        if (op == ">>") return bin(Op::Shr, a, b, lng, uns);
        if (op == "<") return bin(Op::Lt, a, b, i32, uns);
        if (op == "<=") return bin(Op::Le, a, b, i32, uns);
        if (op == ">") return bin(Op::Gt, a, b, i32, uns);
        if (op == ">=") return bin(Op::Ge, a, b, i32, uns);
        if (op == "~") {
            if (!is_cstr(ta) || !is_cstr(tb)) fail(pos, "operands of '~' must be char *");
            return bin(Op::Glob, a, b, i32);
        }
        if (op == "==" || op == "!=") {
            bool str = is_cstr(ta) && is_cstr(tb);
            if (str) return bin(op == "==" ? Op::StrEq : Op::StrNe, a, b, i32);
            return bin(op == "==" ? Op::Eq : Op::Ne, a, b, i32);
        }
        if (op == "&") return bin(Op::BitAnd, a, b, lng);
        if (op == "^") return bin(Op::Xor, a, b, lng);
        if (op == "|") return bin(Op::BitOr, a, b, lng);
        if (op == "&&") return bin(Op::LAnd, a, b, i32);
        return bin(Op::LOr, a, b, i32);
    }
    int32_t inc(Op op, int32_t a, int64_t delta, size_t pos) {
        if (!lvalue(N(a))) fail(pos, "lvalue required for ++/--");
        prog_.writes_ = true;
        Type t = T(a);
        return bin(op, a, -1, t, false, t.ptr ? delta * int64_t(elem_size(t)) : delta);
    }
    int32_t parse_unary() {
        Nest nest(*this);
        size_t pos = tok_.pos;
        if (tok_.kind == Tok::Punct) {
            std::string op = tok_.text;
            if (op == "++" || op == "--") {
                next();
                int32_t a = parse_unary();
                return inc(Op::PreInc, a, op == "++" ? 1 : -1, pos);
            }
            if (op == "+") {
                next();
                return parse_unary();
            }
            if (op == "-" || op == "!" || op == "~") {
                next();
                int32_t a = parse_unary();
                Type t = op == "!" ? Type{4, false, 0} : Type{8, T(a).is_unsigned, 0};
                return bin(op == "-" ? Op::Neg : op == "!" ? Op::Not : Op::BitNot, a, -1, t);
            }
            if (op == "*") {
                next();
                int32_t a = parse_unary();
                Type t = T(a);
                if (!t.ptr) fail(pos, "bad dereference");
                t.ptr--;
                return bin(Op::Deref, a, -1, t);
            }
            if (op == "&") {
                next();
                int32_t a = parse_unary();
                if (!lvalue(N(a))) fail(pos, "bad address-of");
                prog_.writes_ = true;  // the address may be written through
                Type t = T(a);
                t.ptr++;
                return bin(Op::AddrOf, a, -1, t);
            }
            if (op == "(") {
                // A cast if a type name follows; otherwise a parenthesised primary (postfix applies).
                size_t save_i = i_;
                Tok save = tok_;
                next();
                if (at_type()) {
                    Type t = parse_type();
                    expect(")", " after cast type");
                    int32_t a = parse_unary();
                    return bin(Op::Cast, a, -1, t);
                }
                i_ = save_i;
                tok_ = save;
            }
        }
        if (tok_.kind == Tok::Ident && tok_.text == "sizeof") {
            next();
            expect("(", " after sizeof");
            if (!at_type()) fail(tok_.pos, "type name expected in sizeof");
            Type t = parse_type();
            expect(")", " after sizeof type");
            return imm(t.ptr ? 8 : t.size);
        }
        return parse_postfix();
    }
    int32_t parse_postfix() {
        int32_t a = parse_primary();
        while (true) {
            size_t pos = tok_.pos;
            if (is("[")) {
                next();
                int32_t idx = parse_comma();
                expect("]", " after index");
                Type ta = T(a), tb = T(idx);
                if (!ta.ptr && tb.ptr) std::swap(a, idx), std::swap(ta, tb);
                if (!ta.ptr) fail(pos, "pointer or array expected before '['");
                int32_t sum = bin(Op::Add, a, idx, ta, false, elem_size(ta));
                Type t = ta;
                t.ptr--;
                a = bin(Op::Deref, sum, -1, t);
            } else if (is("++") || is("--")) {
                bool up = is("++");
                next();
                a = inc(Op::PostInc, a, up ? 1 : -1, pos);
            } else {
                return a;
            }
        }
    }
    int32_t parse_primary() {
        size_t pos = tok_.pos;
        switch (tok_.kind) {
            case Tok::End:
                fail(pos, "unexpected end of expression");
            case Tok::Num: {
                uint64_t v = tok_.num;
                Type t{4, false, 0};
                if (tok_.num_unsigned)
                    t = Type{8, true, 0};
                else if (v > uint64_t(INT32_MAX))
                    t = Type{8, false, 0};
                next();
                return imm(int64_t(v), t);
            }
            case Tok::Str: {
                prog_.strings_.push_back(tok_.text);
                next();
                while (tok_.kind == Tok::Str) next();  // adjacent literals: the second is skipped (§2.7.2)
                Node n;
                n.op = Op::Str;
                n.imm = int64_t(prog_.strings_.size() - 1);
                n.type = Type{1, false, 1};
                return add(n);
            }
            case Tok::Punct:
                if (is("(")) {
                    next();
                    int32_t a = parse_comma();
                    expect(")", nullptr);
                    return a;
                }
                fail(pos, "unexpected '" + tok_.text + "'");
            case Tok::Ident:
                break;
        }
        std::string name = tok_.text;
        next();
        if (is("(")) return parse_call(name, pos);
        for (const VarInfo& v : vars_) {
            if (v.name != name) continue;
            Node n;
            n.op = v.op;
            n.type = v.type;
            n.space = v.space;
            n.imm = v.offset;
            n.dyn_string = v.dyn_string;
            n.var = var_index(v);
            prog_.min_size_ = std::max(prog_.min_size_, v.need);
            return add(n);
        }
        fail(pos, "undefined variable '" + name + "'");
    }
    int32_t parse_call(const std::string& name, size_t pos) {
        struct Sig {
            const char* name;
            Fn fn;
            int min, max;
            Type ret;
        };
        static const Sig sigs[] = {
            {"printf", Fn::Printf, 1, 7, Type{4, false, 0}},
            {"ksymbol", Fn::Ksymbol, 1, 1, Type{1, false, 1}},
            {"ntohl", Fn::Ntohl, 1, 1, Type{4, false, 0}},
            {"ntohs", Fn::Ntohs, 1, 1, Type{2, false, 0}},
            {"strncmp", Fn::Strncmp, 3, 3, Type{4, false, 0}},
            {"comm_get", Fn::CommGet, 1, 1, Type{1, false, 1}},
            {"syscall_name", Fn::SyscallName, 1, 1, Type{1, false, 1}},
            {"exit_reason_str", Fn::ExitReason, 2, 2, Type{1, false, 1}},
            {"system", Fn::System, 1, 7, Type{4, false, 0}},
        };
        const Sig* sig = nullptr;
        for (const Sig& s : sigs)
            if (name == s.name) sig = &s;
        if (!sig) fail(pos, "undefined function '" + name + "'");
        next();  // '('
        std::vector<int32_t> args;
        std::vector<size_t> at;  // where each argument starts, for messages
        if (!is(")")) {
            while (true) {
                at.push_back(tok_.pos);
                args.push_back(parse_assign());
                if (!is(",")) break;
                next();
            }
        }
        expect(")", " after function arguments");
        if (int(args.size()) < sig->min || int(args.size()) > sig->max)
            fail(pos, "wrong number of arguments to " + name);
        if ((sig->fn == Fn::Printf || sig->fn == Fn::System) && !is_cstr(T(args[0])))
            fail(pos, name + " format must be char *");
        int32_t format = -1;
        if (sig->fn == Fn::Printf || sig->fn == Fn::System) format = check_format(name, args, at);
        if (sig->fn == Fn::Strncmp && (!is_cstr(T(args[0])) || !is_cstr(T(args[1]))))
            fail(pos, "strncmp arguments must be char *");
        if (sig->fn == Fn::Ksymbol) prog_.uses_ksymbol_ = true;
        Node n;
        n.op = Op::Call;
        n.fn = sig->fn;
        n.type = sig->ret;
        n.a = int32_t(prog_.args_.size());
        n.imm = int64_t(args.size());
        n.b = format;
        prog_.args_.insert(prog_.args_.end(), args.begin(), args.end());
        return add(n);
    }

    // The format of printf()/system() must be a literal: checked here against the arguments, it
    // is formatted one conversion at a time at run time (printf_format.h). Returns its index.
    int32_t check_format(const std::string& name, const std::vector<int32_t>& args,
                         const std::vector<size_t>& at) {
        if (N(args[0]).op != Op::Str)
            fail(at[0],
                 name + " format must be a string literal (one computed at run time cannot be checked)");
        printf_format::Format f;
        size_t off = 0;
        std::string msg = printf_format::parse(prog_.strings_[size_t(N(args[0]).imm)].c_str(), f, &off);
        if (!msg.empty()) fail(at[0], name + " format: " + msg);
        std::vector<printf_format::Arg> classes;
        for (size_t k = 1; k < args.size(); ++k) {
            Type t = T(args[k]);
            classes.push_back(!t.ptr       ? printf_format::Arg::Integer
                              : is_cstr(t) ? printf_format::Arg::String
                                           : printf_format::Arg::Pointer);
        }
        size_t bad = 0;
        msg = printf_format::check(f, classes, &bad);
        if (!msg.empty()) fail(bad + 1 < at.size() ? at[bad + 1] : at[0], name + " format: " + msg);
        prog_.formats_.push_back(std::move(f));
        return int32_t(prog_.formats_.size() - 1);
    }

    // The variable's row in Program::globals_ (the listing's "Global variable:"), added once.
    int32_t var_index(const VarInfo& v) {
        for (size_t k = 0; k < prog_.globals_.size(); ++k)
            if (prog_.globals_[k].name == v.name) return int32_t(k);
        prog_.globals_.push_back({v.name, var_decl(v), v.space, v.offset});
        return int32_t(prog_.globals_.size() - 1);
    }

    std::vector<VarInfo> vars_;
    Program prog_;
    int nesting_ = 0;
    std::vector<int> depth_;  // tree height of each node, parallel to prog_.nodes_
};

Program compile(std::string_view expr, std::span<const Field> fields, const CompileOptions& opts) {
    return Compiler(expr, fields, opts).run();
}

}  // namespace perfprof::filter
