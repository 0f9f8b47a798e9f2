// The lexer of the expression language (SPEC §2.7.2): numbers (decimal, octal, hexadecimal),
// character and string literals, identifiers, punctuators; blanks, `#` and `//` comments are
// skipped. The compiler (filter/expr.cpp) derives from it: it reads tok_, calls next(), and
// saves and restores (i_, tok_) to look ahead. A lexical error throws ExprLexer::Error, which
// the compiler turns into its CompileError (it knows the variables the message lists).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace perfprof::filter {

struct Tok {
    enum Kind { End, Num, Str, Ident, Punct } kind = End;
    size_t pos = 0;
    std::string text;  // identifier, punctuator, or decoded string
    uint64_t num = 0;
    bool num_unsigned = false;
};

class ExprLexer {
public:
    ExprLexer(const ExprLexer&) = delete;
    ExprLexer& operator=(const ExprLexer&) = delete;

protected:
    struct Error {
        size_t pos;
        std::string msg;
    };

    explicit ExprLexer(std::string_view src) : src_(src) {}
    ~ExprLexer() = default;

    [[noreturn]] static void fail(size_t pos, const std::string& msg) { throw Error{pos, msg}; }

    // Reads the next token into tok_.
    void next();
    bool is(const char* p) const { return tok_.kind == Tok::Punct && tok_.text == p; }
    // Consumes punctuator `p`, or fails with "missing 'p'" and `what` after it.
    void expect(const char* p, const char* what) {
        if (!is(p)) fail(tok_.pos, std::string("missing '") + p + "'" + (what ? what : ""));
        next();
    }

    std::string_view src_;
    size_t i_ = 0;  // where the next token starts to be looked for
    Tok tok_;

private:
    void skip_space();
    char lit_char(size_t& j);
};

}  // namespace perfprof::filter
