// Demangling of symbol names for display (SPEC §5.4.5): C++ (Itanium), then JVM signatures;
// Rust legacy names get their hash cut and $…$ escapes decoded after the C++ pass.
#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "sym/object.h"

namespace perfprof::sym {

namespace {

// Rust legacy: "a::b::h0123456789abcdef" → "a::b", with the $…$ escapes decoded.
bool rust_hash_suffix(std::string_view s, size_t* cut) {
    if (s.size() < 20) return false;
    size_t h = s.size() - 17;
    if (s[h] != 'h' || s.compare(h - 2, 2, "::") != 0) return false;
    for (size_t i = h + 1; i < s.size(); ++i)
        if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    *cut = h - 2;
    return true;
}

std::string rust_unescape(std::string_view s) {
    static const std::pair<std::string_view, std::string_view> table[] = {
        {"$SP$", "@"},  {"$BP$", "*"},  {"$RF$", "&"},  {"$LT$", "<"},   {"$GT$", ">"},  {"$LP$", "("},
        {"$RP$", ")"},  {"$C$", ","},   {"$u7e$", "~"}, {"$u20$", " "},  {"$u27$", "'"}, {"$u5b$", "["},
        {"$u5d$", "]"}, {"$u7b$", "{"}, {"$u7d$", "}"}, {"$u3b$", ";"},  {"$u2b$", "+"}, {"$u22$", "\""},
        {"$u21$", "!"}, {"$u23$", "#"}, {"$u25$", "%"}, {"$u26$", "&"},  {"$u2a$", "*"}, {"$u2c$", ","},
        {"$u2d$", "-"}, {"$u2e$", "."}, {"$u2f$", "/"}, {"$u3a$", ":"},  {"$u3c$", "<"}, {"$u3d$", "="},
        {"$u3e$", ">"}, {"$u3f$", "?"}, {"$u40$", "@"}, {"$u5c$", "\\"}, {"$u5e$", "^"}, {"$u60$", "`"},
        {"$u7c$", "|"},
    };
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        // A component starting with "_$" is escaped punctuation: the '_' is padding.
        if (s[i] == '_' && i + 1 < s.size() && s[i + 1] == '$' && (i == 0 || s[i - 1] == ':')) {
            ++i;
            continue;
        }
        if (s[i] == '$') {
            bool hit = false;
            for (const auto& [from, to] : table)
                if (s.substr(i).starts_with(from)) {
                    out += to;
                    i += from.size();
                    hit = true;
                    break;
                }
            if (hit) continue;
        }
        if (s[i] == '.' && i + 1 < s.size() && s[i + 1] == '.') {
            out += "::";
            i += 2;
            continue;
        }
        out += s[i++];
    }
    return out;
}

// One JVM field type at `i` ("I", "[B", "Ljava/lang/String;") in Java syntax; false if invalid.
bool java_type(std::string_view s, size_t& i, std::string& out) {
    int dims = 0;
    while (i < s.size() && s[i] == '[') ++dims, ++i;
    if (i >= s.size()) return false;
    switch (s[i]) {
        case 'B':
            out += "byte";
            break;
        case 'C':
            out += "char";
            break;
        case 'D':
            out += "double";
            break;
        case 'F':
            out += "float";
            break;
        case 'I':
            out += "int";
            break;
        case 'J':
            out += "long";
            break;
        case 'S':
            out += "short";
            break;
        case 'Z':
            out += "boolean";
            break;
        case 'V':
            out += "void";
            break;
        case 'L': {
            size_t end = s.find(';', i);
            if (end == std::string_view::npos || end == i + 1) return false;
            for (size_t k = i + 1; k < end; ++k) out += s[k] == '/' ? '.' : s[k];
            i = end;
            break;
        }
        default:
            return false;
    }
    ++i;
    while (dims-- > 0) out += "[]";
    return true;
}

// JVM-style "Lpkg/Class;method(ARGS)RET" → "pkg.Class.method(arg, arg)" (no return type);
// empty when `s` is not one.
std::string java_demangle(std::string_view s) {
    size_t semi = s.find(';');
    size_t open = s.find('(', semi == std::string_view::npos ? 0 : semi);
    if (s.size() < 6 || s[0] != 'L' || semi == std::string_view::npos || semi < 2 ||
        open == std::string_view::npos || open == semi + 1)
        return {};
    std::string out;
    for (size_t k = 1; k < semi; ++k) out += s[k] == '/' ? '.' : s[k];
    out += '.';
    out.append(s.substr(semi + 1, open - semi - 1));
    out += '(';
    size_t i = open + 1;
    bool first = true;
    while (i < s.size() && s[i] != ')') {
        if (!first) out += ", ";
        first = false;
        if (!java_type(s, i, out)) return {};
    }
    if (i >= s.size()) return {};
    ++i;
    std::string ret;
    if (!java_type(s, i, ret) || i != s.size()) return {};
    out += ')';
    return out;
}

}  // namespace

// The Itanium demangling of the NUL-terminated `z`, with Rust's legacy hash cut, into `out`.
// One malloc'd buffer per thread, grown by __cxa_demangle as needed and kept.
bool demangle_itanium(const char* z, std::string* out) {
    struct Buf {
        char* p = nullptr;
        size_t n = 0;
        ~Buf() { std::free(p); }
    };
    thread_local Buf buf;
    int status = 0;
    char* r = abi::__cxa_demangle(z, buf.p, &buf.n, &status);
    if (status != 0 || !r) return false;
    buf.p = r;  // possibly moved by realloc; buf.n is its new size
    std::string_view s(r);
    size_t cut = 0;
    if (rust_hash_suffix(s, &cut))
        *out = rust_unescape(s.substr(0, cut));
    else
        out->assign(s);
    return true;
}

std::string demangle(const char* raw) {
    std::string out;
    if (raw[0] == '_' && raw[1] == 'Z' && demangle_itanium(raw, &out)) return out;
    return demangle(std::string_view(raw));
}

std::string demangle(std::string_view raw) {
    if (raw.starts_with("_Z")) {
        std::string out;
        if (demangle_itanium(std::string(raw).c_str(), &out)) return out;
    }
    if (raw.starts_with("L")) {
        if (std::string j = java_demangle(raw); !j.empty()) return j;
    }
    return std::string(raw);
}

}  // namespace perfprof::sym
