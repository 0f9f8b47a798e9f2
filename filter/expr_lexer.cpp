// The expression language's lexer (filter/expr_lexer.h).
#include "filter/expr_lexer.h"

#include <cctype>
#include <cstring>

namespace perfprof::filter {

void ExprLexer::skip_space() {
    while (i_ < src_.size()) {
        char c = src_[i_];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ++i_;
        } else if (c == '#' || (c == '/' && i_ + 1 < src_.size() && src_[i_ + 1] == '/')) {
            while (i_ < src_.size() && src_[i_] != '\n') ++i_;
        } else {
            break;
        }
    }
}

// One character of a string/char literal: only \n is special, \X gives X (§2.7.2).
char ExprLexer::lit_char(size_t& j) {
    char c = src_[j++];
    if (c == '\\' && j < src_.size()) {
        c = src_[j++];
        if (c == 'n') c = '\n';
    }
    return c;
}

void ExprLexer::next() {
    skip_space();
    tok_ = Tok{};
    tok_.pos = i_;
    if (i_ >= src_.size()) return;
    char c = src_[i_];
    if (c >= '0' && c <= '9') {
        uint64_t v = 0;
        int base = 10;
        size_t j = i_;
        if (c == '0' && j + 1 < src_.size() && (src_[j + 1] == 'x' || src_[j + 1] == 'X')) {
            base = 16;
            j += 2;
            if (j >= src_.size() || !std::isxdigit((unsigned char)src_[j]))
                fail(i_, "bad hexadecimal literal");
        } else if (c == '0') {
            base = 8;
        }
        for (; j < src_.size() && std::isalnum((unsigned char)src_[j]); ++j) {
            char d = src_[j];
            int dv = std::isdigit((unsigned char)d) ? d - '0' : (std::tolower((unsigned char)d) - 'a' + 10);
            if (dv >= base)
                fail(j, base == 8 && dv < 10 ? "invalid digit in octal literal" : "bad integer literal");
            if (v > (UINT64_MAX - uint64_t(dv)) / uint64_t(base)) fail(i_, "integer literal too large");
            v = v * base + dv;
        }
        tok_.kind = Tok::Num;
        tok_.num = v;
        tok_.num_unsigned = v > uint64_t(INT64_MAX);
        i_ = j;
        return;
    }
    if (std::isalpha((unsigned char)c) || c == '_') {
        size_t j = i_;
        while (j < src_.size() && (std::isalnum((unsigned char)src_[j]) || src_[j] == '_')) ++j;
        tok_.kind = Tok::Ident;
        tok_.text = std::string(src_.substr(i_, j - i_));
        i_ = j;
        return;
    }
    if (c == '\'') {
        size_t j = i_ + 1;
        if (j >= src_.size()) fail(i_, "unterminated character literal");
        char v = lit_char(j);
        if (j >= src_.size() || src_[j] != '\'') fail(i_, "unterminated character literal");
        tok_.kind = Tok::Num;
        tok_.num = uint64_t(int64_t(v));
        i_ = j + 1;
        return;
    }
    if (c == '"') {
        size_t j = i_ + 1;
        std::string s;
        while (j < src_.size() && src_[j] != '"') s += lit_char(j);
        if (j >= src_.size()) fail(i_, "unterminated string literal");
        tok_.kind = Tok::Str;
        tok_.text = std::move(s);
        i_ = j + 1;
        return;
    }
    static const char* const two[] = {"++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
    for (const char* t : two) {
        if (src_.substr(i_, 2) == t) {
            tok_.kind = Tok::Punct;
            tok_.text = t;
            i_ += 2;
            return;
        }
    }
    if (std::strchr("+-*/%<>=!~&|^?:,()[]", c)) {
        tok_.kind = Tok::Punct;
        tok_.text = std::string(1, c);
        ++i_;
        return;
    }
    fail(i_, std::string("unexpected character '") + c + "'");
}

}  // namespace perfprof::filter
